"""The per-row context that every metric's sample-level scorer reads.

lighteval prepares each sample once (``sample_preparator``) and hands it to every metric;
this is polyreason's counterpart. A :class:`Sample` is one generation row plus the
scoring rules (:class:`Rules`: the verifier, the language detector, the LCPR rule, the SLC
threshold, the TTC context), and computes on demand, once, what several scorers share:
the verdict of the answer, the reasoning trace (``components.verification.split_think``),
its cleaned paragraphs, the lines the LCPR rule checks and the steps SLC checks, and the
SLC value, each checked line's verdict (``line_verdicts``: what ``failed_lines`` and ``score --explain``
show), and the line and word verdicts under each LCPR rule scored beside the main one;
for a QA row (``Rules.kind`` ``qa``) the short answer of its last ``<answer>`` block, its
accepted answers and the searches it made. Scorers are therefore one-liners over a
``Sample`` (``components.metrics.registry``).

Language detection is batched: before any scorer runs, the scoring driver passes
``detection_texts()`` of a whole chunk of samples to the detector's ``prefetch`` (lingua's
parallel batch API), so each distinct line and step is detected once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from components.extraction import extract
from components.language import MemoDetector, clean_paragraphs, detect_block
from components.metrics.lcpr import LcprRule
from components.metrics.lcpr_lines import LineVerdict, failed_lines
from components.metrics.qa import extract_answer, normalize_answer
from components.metrics.slc import share_in_language, step_units
from components.retrieval.protocol import INFORMATION_HEAD
from components.verification import split_think


@dataclass(frozen=True)
class Rules:
    """What a sample is judged with: built once per scoring call (the detector once per chunk)."""

    verify: Callable[..., Any]
    detector: MemoDetector
    rule: LcprRule
    words: frozenset[str] | None
    slc_threshold: float
    max_context: int | None
    extraction: str = "lenient"
    beside: Mapping[str, LcprRule] = field(default_factory=dict)  # more LCPR rules judged on the same completion
    kind: str = "math"  # the metric table's kind of the rows: math, or qa (short answers)
    slc_detector: Any = None  # a step-level detector SLC uses instead of ``detector`` (langdetect: PCS's)


def found_only_by_fallback(text: str) -> bool:
    """Lenient extraction finds an answer where strict extraction finds none.

    >>> found_only_by_fallback("The answer is 18."), found_only_by_fallback("<think>t</think>\\\\boxed{18}")
    (True, False)
    """
    return extract(text, mode="strict").answer is None and extract(text, mode="lenient").answer is not None


class Sample:
    """One generation row under ``rules``; every derived piece is computed once, when first read."""

    def __init__(self, row: Mapping[str, Any], rules: Rules) -> None:
        self.row = row
        self.rules = rules

    @property
    def lang(self) -> str:
        return self.row["lang"]

    @property
    def completion(self) -> str:
        return self.row["completion"]

    @cached_property
    def verdict(self) -> dict[str, Any]:
        """``extracted``, ``normalized``, ``correct`` and ``fallback`` (an empty completion is incorrect)."""
        text = self.completion
        if not text.strip():
            return {"extracted": None, "normalized": None, "correct": False, "fallback": False}
        verdict = self.rules.verify(text, self.row["gold"], self.lang, extract=True, mode=self.rules.extraction)
        return {"extracted": verdict.extracted, "normalized": verdict.normalized, "correct": bool(verdict.correct),
                "fallback": found_only_by_fallback(text)}

    @cached_property
    def trace(self) -> str:
        return split_think(self.completion).trace

    @cached_property
    def lcpr_trace(self) -> str:
        """The trace as the LCPR rule reads it (a reference rule may cut it its own way)."""
        return self.rules.rule.trace(self.completion)

    @cached_property
    def paragraphs(self) -> list[str]:
        return clean_paragraphs(self.trace)

    @cached_property
    def cleaned(self) -> str:
        return "\n".join(self.paragraphs)

    @cached_property
    def lines(self) -> list[str]:
        """The units the LCPR rule's line level checks."""
        same = self.lcpr_trace == self.trace
        return self.rules.rule.line_units(self.lcpr_trace, self.lang, cleaned=self.cleaned if same else None)

    @cached_property
    def steps(self) -> list[str]:
        """The cleaned, language-bearing steps SLC checks."""
        return step_units(self.trace, cleaned_paragraphs=self.paragraphs)

    @cached_property
    def slc(self) -> float | None:
        return share_in_language(self.steps, self.lang, self.rules.slc_detector or self.rules.detector)

    @cached_property
    def line_verdicts(self) -> list[LineVerdict]:
        """Each checked line's verdict under the LCPR rule (pass, fail or undecided, with lingua's reading)."""
        return self.rules.rule.judge_lines(self.lines, self.lang, self.rules.detector)

    def line_pass(self) -> bool | None:
        return self.rules.rule.trace_verdict(self.line_verdicts)

    def failed_lines(self) -> list[dict] | None:
        """The failing lines with the language detected in each, on a trace that fails the line level."""
        return failed_lines(self.line_verdicts) if self.line_pass() is False else None

    def word_pass(self) -> bool | None:
        return self.rules.rule.word_pass(self.lcpr_trace, self.lang, units=self.lines, words=self.rules.words,
                                         cleaned=self.cleaned)

    def detected_language(self) -> str | None:
        """Top-1 language of the whole cleaned trace (None without letters)."""
        return detect_block(self.rules.detector, self.cleaned)

    @cached_property
    def _beside_units(self) -> dict[str, tuple[str, list[str]]]:
        out = {}
        for name, rule in self.rules.beside.items():
            trace = rule.trace(self.completion)
            out[name] = (trace, rule.line_units(trace, self.lang))
        return out

    def beside(self, name: str) -> dict[str, bool | None]:
        """``line_pass`` and ``word_pass`` under the rule ``name`` scored beside the main one."""
        rule, (trace, units) = self.rules.beside[name], self._beside_units[name]
        return {"line_pass": rule.trace_verdict(rule.judge_lines(units, self.lang, self.rules.detector)),
                "word_pass": rule.word_pass(trace, self.lang, units=units, words=self.rules.words)}

    @cached_property
    def qa_answer(self) -> str | None:
        """The short answer: the last ``<answer>`` block outside retrieved passages (QA rows)."""
        return extract_answer(self.completion)

    @property
    def golds(self) -> list[str]:
        """Every accepted answer of a QA row (its ``answers``, else its ``gold``)."""
        return [str(a) for a in self.row.get("answers") or [self.row["gold"]]]

    @property
    def searches(self) -> int:
        """Retrievals the rollout made: the ``<information>`` blocks of its completion."""
        return self.completion.count(INFORMATION_HEAD.strip())

    def extracted(self) -> tuple[str | None, str | None]:
        """The answer as found and as compared: the verifier's, or a QA row's normalized short answer."""
        if self.rules.kind == "qa":
            return self.qa_answer, normalize_answer(self.qa_answer) if self.qa_answer is not None else None
        return self.verdict["extracted"], self.verdict["normalized"]

    def detection_texts(self) -> Iterator[str]:
        """Every line the detector will be asked about (for one batched prefetch)."""
        if self.rules.kind == "qa":
            yield from ([self.qa_answer] if self.qa_answer else [])
            return
        beside = (unit for _, units in self._beside_units.values() for unit in units)
        for unit in (*self.lines, *self.steps, *beside):
            yield from unit.split("\n")
