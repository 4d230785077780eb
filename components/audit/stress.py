"""Answer-format stress suite: surface variants of gold answers, per language, right and wrong.

Implements the verifier robustness suite of "Multilingual verifier bias in
RLVR" (arXiv 2608.20362, section 4): the same numeric answer written the ways
models write it (currency, markdown emphasis, parentheses, decimal variants,
full-width digits, CJK magnitude units, language-specific suffixes and
sentence frames). Every variant is labelled: *correct* renders the gold
number, *wrong* renders a perturbed number in the same form and frame
(``perturb``). The variants live in ``stress_table.yaml`` (extend the table,
not the code); this module only fills number placeholders and counts.

Report, per verifier and language: ``accept_correct`` (share of correct
variants accepted; ``1 - accept_correct`` is the suite's FNR) and
``reject_wrong`` (share of wrong variants rejected).

>>> slots = number_slots(Decimal("70000"))
>>> slots["n_grouped"], slots["n_wan"], slots["n_fullwidth"]
('70,000', '7万', '７００００')
>>> perturb("70000"), perturb("18"), perturb("3.5")
('80000', '19', '4.5')
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

import yaml

TABLE_PATH = Path(__file__).with_name("stress_table.yaml")
_PLACEHOLDER = re.compile(r"\{(n[a-z_]*)\}")
_FULLWIDTH = str.maketrans("0123456789", "０１２３４５６７８９")


@dataclass(frozen=True)
class Variant:
    """One surface form of a number in one sentence frame."""

    lang: str
    gold: str
    form: str
    frame: str
    text: str
    correct: bool
    extract: bool = True


def load_table(path: str | Path | None = None) -> dict:
    """Read the stress table (default: the packaged ``stress_table.yaml``)."""
    table = yaml.safe_load(Path(path or TABLE_PATH).read_text(encoding="utf-8"))
    if not isinstance(table, dict) or "languages" not in table:
        raise ValueError(f"{path or TABLE_PATH}: a stress table needs a 'languages' mapping")
    return table


def parse_number(text: str) -> Decimal:
    """A gold answer as a Decimal (commas are thousands separators, as in MGSM golds).

    >>> parse_number("2,125")
    Decimal('2125')
    """
    try:
        return Decimal(text.replace(",", "").strip())
    except InvalidOperation:
        raise ValueError(f"stress golds must be plain numbers, got {text!r}") from None


def _plain(value: Decimal) -> str:
    text = format(value.normalize(), "f")
    return "0" if text in ("-0", "") else text


def _grouped(value: Decimal, sep: str, point: str) -> str:
    sign = "-" if value < 0 else ""
    whole, _, frac = _plain(abs(value)).partition(".")
    groups = f"{int(whole):,}".replace(",", sep)
    return sign + groups + (point + frac if frac else "")


def _magnitude(value: Decimal, unit: int, char: str) -> str:
    return _plain(value / unit) + char


def number_slots(value: Decimal) -> dict[str, str]:
    """Every placeholder that applies to ``value`` (see the table's header)."""
    plain = _plain(value)
    integer = value == value.to_integral_value()
    slots = {
        "n": plain,
        "n_fullwidth": plain.translate(_FULLWIDTH),
        "n_cents": f"{value:.2f}",
        "n_cents_comma": f"{value:.2f}".replace(".", ","),
    }
    if integer:
        slots["n_point_zero"] = plain + ".0"
    else:
        slots["n_decimal_comma"] = plain.replace(".", ",")
    if abs(value) >= 1000:
        slots["n_grouped"] = _grouped(value, ",", ".")
        slots["n_grouped_dot"] = _grouped(value, ".", ",")
        slots["n_grouped_space"] = _grouped(value, "\u202f", ",")
        slots["n_grouped_nbsp"] = _grouped(value, "\u00a0", ",")
    if value < 0:
        slots["n_unicode_minus"] = "\u2212" + plain[1:]
    if integer and 1000 <= value < 10000 and value % 1000 == 0:
        slots["n_qian"] = _magnitude(value, 1000, "千")
    if integer and value >= 10000 and value % 1000 == 0:
        slots["n_wan"] = _magnitude(value, 10000, "万")
        slots["n_wan_trad"] = _magnitude(value, 10000, "萬")
    if integer and value >= 10**8 and value % 10**7 == 0:
        slots["n_yi"] = _magnitude(value, 10**8, "亿")
        slots["n_yi_trad"] = _magnitude(value, 10**8, "億")
    return slots


def perturb(gold: str) -> str:
    """A wrong answer of the same shape: add one unit of the last nonzero digit (integers) or 1."""
    value = parse_number(gold)
    if value == value.to_integral_value() and value != 0:
        digits = _plain(abs(value))
        step = Decimal(10) ** (len(digits) - len(digits.rstrip("0")))
        return _plain(value + step)
    return _plain(value + 1)


def _fill(template: str, slots: Mapping[str, str]) -> str | None:
    names = _PLACEHOLDER.findall(template)
    if any(name not in slots for name in names):
        return None
    for name in names:
        template = template.replace("{" + name + "}", slots[name])
    return template


def build_variants(
    golds: Iterable[str], languages: Iterable[str], table: Mapping | None = None
) -> list[Variant]:
    """All correct and wrong variants for each gold and language of the table."""
    table = table if table is not None else load_table()
    common = table.get("common", {})
    out: list[Variant] = []
    for lang in languages:
        spec = table["languages"].get(lang)
        if spec is None:
            raise ValueError(f"stress table has no language {lang!r} (has: {', '.join(table['languages'])})")
        frames = [*common.get("frames", []), *spec.get("frames", [])]
        forms = [*common.get("forms", []), *spec.get("forms", [])]
        for gold in golds:
            for correct, number in ((True, gold), (False, perturb(gold))):
                slots = number_slots(parse_number(number))
                for form in forms:
                    answer = _fill(form["text"], slots)
                    if answer is None:
                        continue
                    for frame in frames:
                        out.append(Variant(
                            lang=lang, gold=gold, form=form["name"], frame=frame["name"],
                            text=frame["text"].replace("{answer}", answer), correct=correct,
                            extract=bool(frame.get("extract", True)),
                        ))
    return out


def judge_variants(variants: Iterable[Variant], verifiers: Iterable[str]) -> list[dict]:
    """Each variant as a record with one boolean verdict per verifier (key = verifier name)."""
    from components.verification import get_verifier

    judges = {name: get_verifier(name) for name in verifiers}
    records = []
    for variant in variants:
        record = asdict(variant)
        for name, judge in judges.items():
            record[name] = bool(judge(variant.text, variant.gold, variant.lang, extract=variant.extract).correct)
        records.append(record)
    return records


def summarize(records: Iterable[Mapping], verifiers: Iterable[str]) -> dict[str, dict[str, dict]]:
    """``{verifier: {lang: {accept_correct, reject_wrong, correct, wrong}}}`` from judged records.

    >>> recs = [{"lang": "ja", "correct": True, "exact": False}, {"lang": "ja", "correct": True, "exact": True},
    ...         {"lang": "ja", "correct": False, "exact": False}]
    >>> summarize(recs, ["exact"])["exact"]["ja"]
    {'correct': 2, 'wrong': 1, 'accept_correct': 0.5, 'reject_wrong': 1.0}
    """
    verifiers = list(verifiers)
    counts: dict[tuple[str, str], list[int]] = {}
    for rec in records:
        for name in verifiers:
            c = counts.setdefault((name, rec["lang"]), [0, 0, 0, 0])  # correct, accepted, wrong, rejected
            if rec["correct"]:
                c[0] += 1
                c[1] += rec[name]
            else:
                c[2] += 1
                c[3] += not rec[name]
    out: dict[str, dict[str, dict]] = {name: {} for name in verifiers}
    for (name, lang), (n_ok, acc, n_bad, rej) in sorted(counts.items()):
        out[name][lang] = {
            "correct": n_ok, "wrong": n_bad,
            "accept_correct": acc / n_ok if n_ok else None, "reject_wrong": rej / n_bad if n_bad else None,
        }
    return out


def run_stress(
    verifiers: Iterable[str], languages: Iterable[str], golds: Iterable[str] | None = None,
    table_path: str | Path | None = None,
) -> tuple[dict[str, dict[str, dict]], list[dict]]:
    """Build, judge and summarize the suite; returns (summary, per-variant records)."""
    table = load_table(table_path)
    verifiers = list(verifiers)
    variants = build_variants(golds if golds is not None else table.get("golds", ["18"]), languages, table)
    records = judge_variants(variants, verifiers)
    return summarize(records, verifiers), records
