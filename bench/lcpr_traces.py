"""LCPR's line level on long labeled reasoning traces: every rule, per language, against the lines' labels.

The corpus is ``trace_corpus.build_corpus`` (MGSM text in 11 languages between a reasoning model's residue:
label lines, LaTeX, list markers, openers, the question quoted back; ``single`` traces in one language, and
``sentence``/``step`` variants with one foreign sentence or step). For each LCPR rule:

* ``ffr``: the trace-level false-failure rate, the share of ``single`` traces whose line level fails (a trace
  with no decided line has none: ``none`` counts them);
* ``sentence``/``step``: the share of variant traces whose failing lines include the injected sentence (a
  line of the injected step);
* line level over every labeled line of every trace: ``precision`` and ``recall`` of "not the query language"
  (a line is flagged when the rule fails it; positives are the lines written in another language).

Each rate comes with Wilson's 95% interval (``components.metrics.intervals.wilson``) and its n. ``--curve``
also prints what the default rule's thresholds were chosen from: among the lines of ``single`` traces, the
share lingua reads as another language than the line's, by residue size (words of spaced scripts, characters
of zh/ja/th) and by lingua's margin over the runner-up. The last line is one JSON object.

    python bench/lcpr_traces.py [--problems 0:100] [--rules adamame,lcb,...] [--curve] [--smoke]

``--smoke`` (CI): two problems in three languages, the default rule: seconds, numbers meaningless.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from locations import shared_data  # noqa: E402
from trace_corpus import LANGUAGES, Trace, build_corpus  # noqa: E402

from components.language import MemoDetector, get_detector  # noqa: E402
from components.metrics.intervals import wilson  # noqa: E402
from components.metrics.lcpr import RULES, get_rule  # noqa: E402
from components.metrics.lcpr_lines import FAIL, MIN_CHARS, MIN_MARGIN, MIN_WORDS, residue_size  # noqa: E402

WORD_BUCKETS = ((1, 1), (2, 2), (3, 3), (4, 4), (5, 6), (7, 999))
CHAR_BUCKETS = ((1, 2), (3, 4), (5, 6), (7, 9), (10, 9999))
MARGIN_BUCKETS = ((0.0, 0.1), (0.1, 0.2), (0.2, 0.3), (0.3, 0.5), (0.5, 1.01))


def rate(hits: int, n: int) -> dict:
    low, high = wilson(hits / n, n) if n else (None, None)
    return {"value": hits / n if n else None, "low": low, "high": high, "hits": hits, "n": n}


def measure_rule(name: str, corpus: list[Trace], detector) -> dict:
    """``ffr``, ``sentence``, ``step`` per language and overall; line precision and recall overall."""
    rule = get_rule(name)
    counts: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    none = defaultdict(int)
    lines = {"tp": 0, "fp": 0, "fn": 0}
    for trace in corpus:
        body = trace.completion.split("</think>")[0].removeprefix("<think>\n")
        units = rule.line_units(body, trace.lang)
        failing = {verdict.text for verdict in rule.judge_lines(units, trace.lang, detector) if verdict.verdict == FAIL}
        level = rule.line_pass(units, trace.lang, detector)
        for element in trace.elements:
            units = rule.line_units(element.text, trace.lang)
            flagged = any(unit in failing for unit in units)
            foreign = element.lang != trace.lang
            key = "tp" if flagged and foreign else "fp" if flagged else "fn" if foreign else None
            if key:
                lines[key] += 1
        cell = counts[trace.lang]
        if trace.variant == "single":
            cell["ffr"][0] += level is False
            cell["ffr"][1] += 1
            none[trace.lang] += level is None
        else:
            injected = [e for e in trace.elements if e.role == "injected"]
            units = {unit for e in injected for unit in rule.line_units(e.text, trace.lang)}
            cell[trace.variant][0] += bool(units & failing)
            cell[trace.variant][1] += 1
    table = {lang: {metric: rate(*counts[lang][metric]) for metric in ("ffr", "sentence", "step")}
             for lang in sorted(counts)}
    for lang in table:
        table[lang]["none"] = none[lang]
    table["all"] = {metric: rate(sum(cell[metric][0] for cell in counts.values()),
                                 sum(cell[metric][1] for cell in counts.values()))
                    for metric in ("ffr", "sentence", "step")}
    table["all"]["none"] = sum(none.values())
    table["all"]["precision"] = rate(lines["tp"], lines["tp"] + lines["fp"])
    table["all"]["recall"] = rate(lines["tp"], lines["tp"] + lines["fn"])
    return table


def _lines_read(corpus: list[Trace], detector) -> tuple[dict, dict]:
    """Distinct (residue, label) of the default rule's units: ``(size, misread, margin)``, for the lines written
    in the trace's language (``single`` traces) and for the injected lines."""
    rule = get_rule("adamame")
    native: dict[tuple, tuple] = {}
    foreign: dict[tuple, tuple] = {}
    for trace in corpus:
        for element in trace.elements:
            own = element.lang == trace.lang
            if own and trace.variant != "single":
                continue
            for unit in rule.line_units(element.text, trace.lang):
                reading = detector.read(unit, clean=False)
                (native if own else foreign)[(unit, element.lang)] = (
                    residue_size(unit), reading.language != element.lang, reading.margin)
    return native, foreign


def _bucket(native: dict, foreign: dict, keep) -> dict:
    mine = [miss for (size, miss, margin) in native.values() if keep(size, margin)]
    theirs = [not miss for (size, miss, margin) in foreign.values() if keep(size, margin)]
    return {"misread": rate(sum(mine), len(mine)), "foreign_found": rate(sum(theirs), len(theirs))}


def curve(corpus: list[Trace], detector) -> dict:
    """The default rule's thresholds, as measured: among the lines of ``single`` traces the share lingua reads as
    another language (``misread``), and among injected lines the share it reads as their language, by words
    (spaced-script lines lingua is sure of: margin at least ``MIN_MARGIN``), by characters (zh/ja/th lines), and
    by margin (lines at or above the size floor)."""
    native, foreign = _lines_read(corpus, detector)
    floor = lambda size: size[0] >= MIN_WORDS or size[1] >= MIN_CHARS  # noqa: E731
    return {
        "words": [{"range": [low, high], **_bucket(native, foreign, lambda s, m, lo=low, hi=high:
                                                    lo <= s[0] <= hi and not s[1] and m >= MIN_MARGIN)}
                  for low, high in WORD_BUCKETS],
        "chars": [{"range": [low, high], **_bucket(native, foreign, lambda s, m, lo=low, hi=high:
                                                    lo <= s[1] <= hi and not s[0])} for low, high in CHAR_BUCKETS],
        "margin": [{"range": [low, high], **_bucket(native, foreign, lambda s, m, lo=low, hi=high:
                                                     lo <= m < hi and floor(s))} for low, high in MARGIN_BUCKETS],
    }


def cell_text(cell: dict) -> str:
    if cell["n"] == 0:
        return "-"
    return f"{cell['value']:.3f} [{cell['low']:.3f}, {cell['high']:.3f}] ({cell['hits']}/{cell['n']})"


def print_tables(tables: dict[str, dict]) -> None:
    for name, table in tables.items():
        print(f"\n{name}: false failures of single-language traces (ffr), injected sentence / step found")
        print(f"{'lang':5} {'ffr':34} {'sentence found':34} {'step found':34} none")
        for lang, row in table.items():
            print(f"{lang:5} {cell_text(row['ffr']):34} {cell_text(row['sentence']):34} {cell_text(row['step']):34} "
                  f"{row['none']}")
        print(f"line level, 'not the query language': precision {cell_text(table['all']['precision'])}, "
              f"recall {cell_text(table['all']['recall'])}")


def print_curve(found: dict) -> None:
    print(f"\ndistinct lines: misread = a line in the trace's language read as another; foreign found = an injected "
          f"line read as its language (words: margin >= {MIN_MARGIN}; margin: at least {MIN_WORDS} words or "
          f"{MIN_CHARS} characters)")
    for kind in ("words", "chars", "margin"):
        print(f"  by {kind}:")
        for bucket in found[kind]:
            print(f"    {bucket['range'][0]}-{bucket['range'][1]}: misread {cell_text(bucket['misread'])}, "
                  f"foreign found {cell_text(bucket['foreign_found'])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", default="0:100", help="MGSM problems START:END (the traces' questions)")
    parser.add_argument("--rules", default=",".join(sorted(RULES)))
    parser.add_argument("--curve", action="store_true", help="also print the default rule's threshold curve")
    parser.add_argument("--smoke", action="store_true", help="two problems, three languages, the default rule (CI)")
    args = parser.parse_args()
    start, end = map(int, args.problems.split(":"))
    languages, rules = LANGUAGES, args.rules.split(",")
    if args.smoke:
        start, end, languages, rules = 0, 2, ("en", "es", "zh"), ["adamame"]
    began = time.perf_counter()
    corpus = build_corpus(shared_data(), problems=range(start, end), languages=languages)
    detector = MemoDetector(get_detector(languages))
    singles = [trace for trace in corpus if trace.variant == "single"]
    print(f"{len(corpus)} traces ({len(singles)} single-language, {min(t.lines for t in corpus)}-"
          f"{max(t.lines for t in corpus)} lines each), {sum(len(t.elements) for t in singles)} labeled lines in "
          f"single traces, {len(languages)} languages, MGSM problems {start}-{end - 1}")
    tables = {name: measure_rule(name, corpus, detector) for name in rules}
    print_tables(tables)
    found = curve(corpus, detector) if args.curve else None
    if found:
        print_curve(found)
    summary = {name: {"ffr": table["all"]["ffr"]["value"], "max_ffr": max(row["ffr"]["value"] for lang, row in
                                                                          table.items() if lang != "all"),
                      "sentence": table["all"]["sentence"]["value"], "step": table["all"]["step"]["value"],
                      "precision": table["all"]["precision"]["value"], "recall": table["all"]["recall"]["value"]}
               for name, table in tables.items()}
    print(json.dumps({"traces": len(corpus), "seconds": round(time.perf_counter() - began, 1), "rules": summary,
                      **({"curve": found} if found else {})}))


if __name__ == "__main__":
    main()
