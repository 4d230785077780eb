"""LCPR's default rule on long labeled reasoning traces (``bench/trace_corpus.py`` from the offline MGSM files).

The traces are MGSM's human-written questions and exemplar chains of thought in 11 languages between the
residue a reasoning model writes (label lines, LaTeX, list markers, names, openers, the question quoted back);
every line is labeled with the language it was written in. The corpus is built from MGSM problems 100-249,
which the thresholds of ``components.metrics.lcpr_lines`` were not chosen on (they were chosen on 0-99).
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from components.language import MemoDetector, get_detector
from components.metrics.lcpr import get_rule
from components.metrics.lcpr_lines import FAIL

BENCH = Path(__file__).resolve().parents[2] / "bench"
PROBLEMS = range(100, 250)


@pytest.fixture(scope="module")
def corpus(shared_data):
    sys.path.insert(0, str(BENCH))
    from trace_corpus import build_corpus

    return build_corpus(shared_data, problems=PROBLEMS)


def test_the_corpus_is_long_labeled_traces(corpus):
    singles = [trace for trace in corpus if trace.variant == "single"]
    labeled = Counter(element.lang for trace in singles for element in trace.elements)
    assert len(labeled) == 11 and sum(labeled.values()) >= 2000
    assert sum(trace.lines >= 40 for trace in singles) >= 200
    injected = [trace for trace in corpus if trace.variant != "single"]
    assert all(sum(e.role == "injected" for e in trace.elements) == (1 if trace.variant == "sentence" else 4)
               for trace in injected)
    assert all({e.lang for e in trace.elements if e.role == "injected"} == {trace.foreign} for trace in injected)


def test_the_default_rule_keeps_single_language_traces_and_finds_one_foreign_sentence(corpus):
    rule, detector = get_rule("adamame"), MemoDetector(get_detector())
    failed: dict[str, list[bool]] = defaultdict(list)
    found: dict[str, list[bool]] = defaultdict(list)
    for trace in corpus:
        units = rule.line_units(rule.trace(trace.completion), trace.lang)
        verdicts = rule.judge_lines(units, trace.lang, detector)
        failing = {verdict.text for verdict in verdicts if verdict.verdict == FAIL}
        if trace.variant == "single":
            failed[trace.lang].append(rule.trace_verdict(verdicts) is False)
        else:
            injected = {unit for e in trace.elements if e.role == "injected"
                        for unit in rule.line_units(e.text, trace.lang)}
            found[trace.variant].append(bool(injected & failing))
    rates = {lang: sum(flags) / len(flags) for lang, flags in failed.items()}
    assert len(rates) == 11 and max(rates.values()) <= 0.02, rates
    assert sum(found["sentence"]) / len(found["sentence"]) >= 0.95
    assert sum(found["step"]) / len(found["step"]) >= 0.95
