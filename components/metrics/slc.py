"""Step-level language consistency SLC(T, L) (PCS seed paper, "step-level language consistency
reward": strip math with regular expressions, detect each step's language, SLC = share of steps
in the target language), SLC&Acc, and top-1 language consistency of a whole trace.

Steps: the trace is split into paragraphs at blank lines (a line holding only whitespace).
R1-style traces separate steps with ``"\\n\\n"``; when a trace has a single paragraph of
several lines, each non-empty line is a step instead, so a trace written without blank lines
is not judged as one block. Each step is cleaned (``clean_for_detection``); steps with no
letter left (pure math) bear no language and are left out. ``SLC = #steps detected as L /
#language-bearing steps``; ``None`` when no step bears language (an empty trace).

``SLC&Acc`` (PCS's main metric) is correct *and* ``SLC >= 0.9``; a trace with no
language-bearing step does not count as consistent.

Language consistency (the fidelity metric of prior work, AdaMame C.4) asks whether the top-1
detected language of the whole cleaned trace is L.

Multi-line steps and whole traces go through ``components.language.detect_block``: when all
their lines are detected as one language that is their language, otherwise the block is
detected whole. Lines are the units LCPR detects anyway, so a consistent trace costs no
second pass of lingua over its text.

Step detectors (``SLC_DETECTORS``): ``lingua`` (the project's detector, over a small candidate
set, by the line rule above) or ``langdetect`` (PCS's own: each step detected whole by
langdetect over all its languages, ``components.langdetect_detector.LangdetectDetector``), the reference
a profile reproducing PCS's numbers judges SLC with. A detector with ``detect_step`` is asked
for each step whole.

>>> split_steps("First.\\n\\nSecond line a\\nSecond line b\\n\\n\\nThird.")
['First.', 'Second line a\\nSecond line b', 'Third.']
>>> split_steps("one\\ntwo\\n\\n"), split_steps("   ")
(['one', 'two'], [])
>>> slc_and_acc(True, 0.95), slc_and_acc(True, 0.5), slc_and_acc(False, 1.0), slc_and_acc(True, None)
(True, False, False, False)
"""

from __future__ import annotations

from typing import Any

from components.language import clean_paragraphs, detect_block, has_letters, split_paragraphs
from components.metrics.lcpr import Detector, clean_trace

SLC_THRESHOLD = 0.9
SLC_DETECTORS = ("lingua", "langdetect")


def step_detector(name: str) -> Any:
    """The step-level detector ``name`` replaces the caller's lingua one with (``None`` for ``lingua``)."""
    if name not in SLC_DETECTORS:
        raise ValueError(f"slc_detector {name!r} is unknown (known: {', '.join(SLC_DETECTORS)})")
    from components.langdetect_detector import LangdetectDetector

    return LangdetectDetector() if name == "langdetect" else None


def step_language(detector: Any, unit: str) -> str | None:
    """The language of one cleaned step: whole by a step detector (langdetect), else by the line rule."""
    whole = getattr(detector, "detect_step", None)
    return whole(unit) if whole is not None else detect_block(detector, unit)


def split_steps(trace: str) -> list[str]:
    """Paragraphs at blank lines; a single multi-line paragraph falls back to its lines."""
    steps = split_paragraphs(trace)
    if len(steps) == 1:
        steps = [line.strip() for line in steps[0].split("\n") if line.strip()]
    return steps


def step_units(trace: str, *, cleaned_paragraphs: list[str] | None = None) -> list[str]:
    """The cleaned, language-bearing steps whose language SLC checks.

    Each paragraph is cleaned whole (so display math spanning its lines goes), then split
    into lines when the trace is a single paragraph. ``cleaned_paragraphs``:
    ``clean_paragraphs(trace)`` when the caller already has it.
    """
    paragraphs = clean_paragraphs(trace) if cleaned_paragraphs is None else cleaned_paragraphs
    steps = paragraphs[0].split("\n") if len(paragraphs) == 1 else paragraphs
    units = ("\n".join(line for line in step.split("\n") if line) for step in steps)
    return [unit for unit in units if has_letters(unit)]


def slc(trace: str, lang: str, detector: Detector) -> float | None:
    """Share of language-bearing steps detected as ``lang``; None when there is none."""
    return share_in_language(step_units(trace), lang, detector)


def share_in_language(units: list[str], lang: str, detector: Detector) -> float | None:
    """Share of (cleaned) units detected as ``lang``; None for no unit."""
    if not units:
        return None
    return sum(step_language(detector, unit) == lang for unit in units) / len(units)


def slc_and_acc(correct: bool, slc_value: float | None, threshold: float = SLC_THRESHOLD) -> bool:
    """Correct and step-level consistent (``SLC >= threshold``)."""
    return bool(correct) and slc_value is not None and slc_value >= threshold


def trace_language(trace: str, detector: Detector) -> str | None:
    """Top-1 detected language of the whole cleaned trace (None without letters)."""
    return detect_block(detector, clean_trace(trace))


def language_consistency(trace: str, lang: str, detector: Detector) -> bool | None:
    """Whether the top-1 language of the whole trace is ``lang`` (None without letters)."""
    detected = trace_language(trace, detector)
    return None if detected is None else detected == lang
