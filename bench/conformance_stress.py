"""The verifier part of the conformance bench: is the reference verifier biased by language?

The answer-format stress suite (``components/audit/stress_table.yaml``) gives each language
its own number formats. Here a second suite gives every language *every* format (the union
of all forms, each language keeping its own sentence frames), so languages differ only in
the words around the number: the ``trusted`` verifier's FNR must then be the same in every
language. The integer-gold grouping rule (a lone ``,``/``.`` before three digits groups
thousands in every language) is measured by judging both suites with and without it: the
false accepts it adds among the wrong variants, and the accepts it adds on a probe of
answers meaning the decimal gold/1000 (``1.234`` or ``1,234`` for the gold 1234: the cost the
rule accepts by design).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


def format_only_table(table: dict) -> dict:
    """Every language of ``table`` with the union of all number forms and its own frames."""
    forms, seen = [], set()
    for spec in (table.get("common", {}), *table["languages"].values()):
        for form in spec.get("forms", []):
            if form["text"] not in seen:
                seen.add(form["text"])
                forms.append(form)
    languages = {lang: {"frames": spec.get("frames", []), "forms": forms} for lang, spec in table["languages"].items()}
    return {"golds": table.get("golds"), "common": {"frames": table.get("common", {}).get("frames", [])},
            "languages": languages}


@contextlib.contextmanager
def grouping_off() -> Iterator[bool]:
    """Judge as if golds never asked for grouping (yields False where the code has no such rule)."""
    from components import verification

    original = verification.parse_number
    if not hasattr(verification, "_numbers"):
        yield False
        return
    verification.parse_number = lambda text, lang=None, *, grouping=False: original(text, lang, grouping=False)
    try:
        yield True
    finally:
        verification.parse_number = original


def _fnr(summary: dict) -> dict:
    return {lang: round(1 - values["accept_correct"], 4) for lang, values in summary["trusted"].items()}


def _judge(variants) -> list[dict]:
    from components.audit.stress import judge_variants

    return judge_variants(variants, ["trusted"])


def _decimal_probe(table: dict) -> list:
    """Answers meaning gold/1000 with three decimals, written with ``.`` and ``,``, as wrong variants."""
    from decimal import Decimal

    from components.audit.stress import Variant

    probe = []
    for gold in table.get("golds", []):
        value = Decimal(gold)
        if value != value.to_integral_value() or not 1000 <= value < 10**6:
            continue
        decimal = f"{value / 1000:.3f}"
        for lang in table["languages"]:
            for text in (decimal, decimal.replace(".", ",")):
                probe.append(Variant(lang=lang, gold=gold, form="decimal_intent", frame="answer_only",
                                     text=text, correct=False, extract=False))
    return probe


def run_stress_checks() -> dict:
    from components.audit.stress import build_variants, load_table, summarize

    table = load_table()
    languages = list(table["languages"])
    golds = table.get("golds", ["18"])
    suites = {"own_formats": table, "every_format": format_only_table(table)}
    out: dict = {}
    for name, suite in suites.items():
        variants = build_variants(golds, languages, suite)
        with_rule = _judge(variants)
        with grouping_off() as has_rule:
            without_rule = _judge(variants) if has_rule else with_rule
        added = sum(not r["correct"] and r["trusted"] and not o["trusted"] for r, o in zip(with_rule, without_rule))
        out[name] = {"variants": len(variants), "fnr": _fnr(summarize(with_rule, ["trusted"])),
                     "fnr_without_grouping": _fnr(summarize(without_rule, ["trusted"])),
                     "false_accepts_added_by_grouping": added,
                     "wrong_variants": sum(not r["correct"] for r in with_rule)}
    probe = _decimal_probe(table)
    with_rule = _judge(probe)
    with grouping_off():
        without_rule = _judge(probe)
    out["decimal_intent_probe"] = {"answers": len(probe), "accepted": sum(r["trusted"] for r in with_rule),
                                   "accepted_without_grouping": sum(r["trusted"] for r in without_rule)}
    for name in suites:
        fnr = out[name]["fnr"]
        print(f"stress {name}: {out[name]['variants']} variants; trusted FNR per language {fnr}; "
              f"without grouping {out[name]['fnr_without_grouping']}; "
              f"false accepts added by grouping {out[name]['false_accepts_added_by_grouping']} "
              f"of {out[name]['wrong_variants']} wrong variants")
    print(f"decimal-intent probe: {out['decimal_intent_probe']}")
    return out
