"""Language Confusion Pass Rate (LCPR) of reasoning traces: the rule registry and its scorers.

Every rule judges one trace on two levels: the line level (every checked line is in the
query language) and the word level (no word of another language); over a corpus,
``LPR = |C \\ C_line| / |C|``, ``WPR`` over the traces without line errors and
``LCPR = 2 * LPR * WPR / (LPR + WPR)`` (AdaMame appendix C.3, after Marchisio et al., 2024).

:data:`RULES` (the registry) names four rules, two per upstream, each documented, with the table of
its differences from the upstream code, in its own module:

* ``adamame`` (the default) and ``adamame_reference``: :mod:`components.metrics.lcpr_adamame`,
  AdaMame's line/word rule; the reference variant reproduces AdaMame's evaluation code.
* ``lcb`` and ``lcb_reference``: :mod:`components.metrics.lcpr_lcb`, the Language Confusion
  Benchmark's rule (five-token lines, the English word list); the reference variant reproduces
  its ``compute_metrics.py`` (punctuation deletion, jieba/fugashi tokens, WPR languages).

A rule is an object with ``trace(completion)``, ``line_units(trace, lang)``,
``judge_lines(units, lang, detector)`` (each unit's verdict: pass, fail or undecided,
:mod:`components.metrics.lcpr_lines`), ``trace_verdict(verdicts)`` (the trace's line level from them),
``line_pass(units, lang, detector)`` (both) and ``word_pass(trace, lang, units=, words=)``;
``needs_words`` says whether it reads the English word list. :func:`judge_trace` runs one
rule on one completion. The function API below (``line_units``, ``line_pass``,
``english_words_pass``, ``word_pass`` with ``cleaned=``) keeps the scorer's calls for the two
corrected rules.

>>> lcpr_from_rates(1.0, 0.5), lcpr_from_rates(0.0, 1.0)
(0.6666666666666666, 0.0)
>>> sorted(RULES)
['adamame', 'adamame_reference', 'lcb', 'lcb_reference']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from components.metrics import lcpr_adamame, lcpr_lcb
from components.metrics.lcpr_adamame import Detector, clean_trace, foreign_words
from components.metrics.lcpr_lcb import english_words_pass, load_english_words
from components.metrics.lcpr_lines import LineVerdict

__all__ = ["RULES", "Detector", "LcprRule", "clean_trace", "english_words_pass",
           "foreign_words", "get_rule", "judge_trace", "lcpr_from_rates", "line_pass", "line_units",
           "load_english_words", "word_pass"]


class LcprRule(Protocol):
    name: str
    needs_words: bool

    def trace(self, completion: str) -> str: ...

    def line_units(self, trace: str, lang: str | None = None, *, cleaned: str | None = None) -> list[str]: ...

    def judge_lines(self, units: list[str], lang: str, detector: Detector) -> list[LineVerdict]: ...

    def trace_verdict(self, verdicts: list[LineVerdict]) -> bool | None: ...

    def line_pass(self, units: list[str], lang: str, detector: Detector) -> bool | None: ...

    def word_pass(self, trace: str, lang: str, *, units: list[str] | None = None,
                  words: frozenset[str] | None = None, cleaned: str | None = None) -> bool | None: ...


RULES: dict[str, Callable[[], LcprRule]] = {
    "adamame": lcpr_adamame.AdaMameRule,
    "adamame_reference": lcpr_adamame.ReferenceRule,
    "lcb": lcpr_lcb.LcbRule,
    "lcb_reference": lcpr_lcb.ReferenceRule,
}


def get_rule(name: str) -> LcprRule:
    """The LCPR rule registered as ``name``."""
    if name not in RULES:
        raise ValueError(f"unknown LCPR rule {name!r}; known: {sorted(RULES)}")
    return RULES[name]()


def judge_trace(completion: str, lang: str, detector: Detector, rule: str = "adamame",
                words: frozenset[str] | None = None) -> dict[str, Any]:
    """``{"trace", "units", "line_pass", "word_pass"}`` of one completion under ``rule``.

    ``word_pass`` is judged for every trace; WPR keeps the traces whose ``line_pass`` is True.
    """
    judge = get_rule(rule)
    trace = judge.trace(completion)
    units = judge.line_units(trace, lang)
    return {"trace": trace, "units": units, "line_pass": judge.line_pass(units, lang, detector),
            "word_pass": judge.word_pass(trace, lang, units=units, words=words)}


def line_units(trace: str, rule: str = "adamame", *, cleaned: str | None = None,
               lang: str | None = None) -> list[str]:
    """The lines whose language the line level of ``rule`` checks.

    ``cleaned``: ``clean_trace(trace)`` when the caller already has it (rule adamame).
    """
    return get_rule(rule).line_units(trace, lang, cleaned=cleaned)


def line_pass(trace: str, lang: str, detector: Detector, rule: str = "adamame",
              words: frozenset[str] | None = None) -> bool | None:
    """The line level of ``trace`` under ``rule`` (None when no line is checked, for most rules)."""
    judge = get_rule(rule)
    return judge.line_pass(judge.line_units(trace, lang), lang, detector)


def word_pass(trace: str, lang: str, detector: Detector | None = None, rule: str = "adamame",
              words: frozenset[str] | None = None, *, cleaned: str | None = None) -> bool | None:
    """The word level of ``trace`` under ``rule``; None when the check does not apply.

    The word level needs no detector; the parameter keeps the scorers' signatures alike.
    """
    return get_rule(rule).word_pass(trace, lang, words=words, cleaned=cleaned)


def lcpr_from_rates(lpr: float, wpr: float) -> float:
    """Harmonic mean of the line- and word-level pass rates (0 when both are 0)."""
    return 0.0 if lpr + wpr == 0 else 2 * lpr * wpr / (lpr + wpr)
