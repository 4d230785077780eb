"""The line verdicts of LCPR's line level: a line is judged only where its text can decide its language.

What the line level asks lingua about is a line *after* cleaning (``components.language.clean_for_detection``:
arithmetic, LaTeX and digits gone). On a reasoning model's label lines that is a fragment: ``Total: 5 + 3 = 8``
leaves ``Total:``, ``So, 13 x 2 = 26.`` leaves ``So, x .``, ``Profit = 20% of $1,200`` leaves
``Profit = % of $ ,``. lingua must still rank its languages, and on two or three words the ranking is close to a
guess among languages that share them (``Total:``: es 0.29, pt 0.25, fr 0.19). Counting such a line as a
failure made plainly English and plainly Spanish traces fail the line level. So each line gets one of three
verdicts (hand-written: lingua answers a language and its confidences, not whether a text can be decided):

* ``undecided`` (neither pass nor fail) when its residue is too short to decide (:func:`residue_size`: fewer
  than ``Floor.words`` words of a spaced script and fewer than ``Floor.chars`` characters of Chinese,
  Japanese or Thai, which are written without spaces), or when lingua is not clearly sure
  (``compute_language_confidence_values``, through ``components.language.Reading``): a line read as the
  query language whose top confidence is less than ``min_margin`` above the runner-up's, or a line read as
  another language whose confidence is less than ``min_margin`` above the query language's (the alternative a
  failure must rule out; when the query language is not the runner-up this gap is the larger one);
* ``fail`` when it is decided and lingua's top language is not the query language;
* ``pass`` otherwise.

A trace fails the line level when a decided line fails, passes when every decided line passes, and has no
line-level verdict (``None``) when no line is decided (:func:`line_level`). Each failing line is kept with the
language detected (:func:`failed_lines`), so a low LPR can be read line by line.

The thresholds come from the labeled trace corpus of ``bench/trace_corpus.py``: MGSM's questions and exemplar
chains of thought in 11 languages between label lines, LaTeX, list markers, names, openers and the question
quoted back (problems 0-99: 1,100 single-language traces of 41-73 lines, 54,532 labeled lines;
``python bench/lcpr_traces.py --curve``). Among the 6,266 distinct lines written in their trace's language, the
share lingua reads as another language (``misread``), and among the 472 distinct injected foreign lines the
share it reads as their own language:

======================================  ===============================  =====================
lines                                   misread                          foreign read right
======================================  ===============================  =====================
1 word (margin >= 0.3)                  1/56                             6/6
2 words (margin >= 0.3)                 23/331 = 0.069 [0.047, 0.102]    7/7
3 words (margin >= 0.3)                 0/78 [0, 0.047]                  13/13
4, 5-6, 7+ words (margin >= 0.3)        0/113, 0/362, 0/3164             14/14, 47/47, 306/306
1-2, 3-4 characters (zh/ja/th)          2/20, 2/18                       1/1, 3/3
5-6, 7-9, 10+ characters                0/36, 0/136, 0/1567              3/3, 9/9, 42/42
margin < 0.1 (3+ words or 5+ chars)     8/18                             1/3
margin 0.1-0.2, 0.2-0.3                 5/22, 4/35                       8/8, 8/8
margin 0.3-0.5, 0.5+                    0/91, 0/5398                     25/25, 409/409
======================================  ===============================  =====================

so a line needs 3 words or 5 characters (``MIN_WORDS``, ``MIN_CHARS``: the smallest sizes from which no line
was misread) and a margin of 0.3 (``MIN_MARGIN``: likewise). With them, on the same traces, no single-language
trace fails (0/1,100) and the injected foreign sentence is among the failing lines in 1,088 of 1,100 traces
(0.989; the misses are sentences of one or two words, and English sentences lingua is not sure of, such as
``cans of tennis balls each is tennis balls.``, 0.165 above German). On problems 100-249, which did not choose
them, 2 of 1,650 single-language traces fail (Thai clauses holding English names, ``Granny Red``; a Spanish
question read as Portuguese, 0.304 above Spanish) and 1,634 of 1,650 injected sentences are found (0.990).
The rule ``lcb`` takes its own floor, five tokens of the residue, and this margin.

The reference rules (``adamame_reference``, ``lcb_reference``) keep their upstream's verdicts: every line is
judged, an undecided one passes upstream in AdaMame's code and fails in the Language Confusion Benchmark's
(:func:`reference_verdicts`).

>>> residue_size("Total: ."), residue_size("So, Total distance ="), residue_size("所以总数是"), residue_size("AB cm x")
((1, 0), (3, 0), (0, 5), (0, 0))
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import NamedTuple, Protocol

from components.language import LETTER_CLASS, SCRIPT_RANGES, Reading, tolerated_token

_UNSPACED = re.compile(f"[{SCRIPT_RANGES['han']}{SCRIPT_RANGES['kana']}{SCRIPT_RANGES['thai']}]")
_WORD = re.compile(f"(?:(?![{SCRIPT_RANGES['han']}{SCRIPT_RANGES['kana']}{SCRIPT_RANGES['thai']}]){LETTER_CLASS})+")

PASS, FAIL, UNDECIDED = "pass", "fail", "undecided"


class Floor(NamedTuple):
    """The least residue a line needs to be judged: ``words`` of a spaced script or ``chars`` of zh/ja/th."""

    words: int
    chars: int


MIN_WORDS = 3
MIN_CHARS = 5
MIN_MARGIN = 0.3
DEFAULT_FLOOR = Floor(MIN_WORDS, MIN_CHARS)


class Reader(Protocol):
    def read(self, text: str, *, clean: bool = True) -> Reading: ...


class LineVerdict(NamedTuple):
    """One checked line: the residue judged, lingua's language and margin, its size and verdict, and why."""

    text: str
    language: str | None
    margin: float
    size: tuple[int, int]
    verdict: str
    reason: str = ""

    def as_row(self) -> dict:
        return {"line": self.text, "detected": self.language, "margin": round(self.margin, 3),
                "words": self.size[0], "chars": self.size[1], "verdict": self.verdict, "reason": self.reason}


@functools.lru_cache(maxsize=65536)
def residue_size(text: str) -> tuple[int, int]:
    """``(words, chars)`` of a cleaned line: words of spaced scripts (letter runs other than tolerated tokens:
    units, single letters, short labels) and characters of Chinese, Japanese and Thai."""
    words = sum(1 for run in _WORD.findall(text) if not tolerated_token(run))
    return words, len(_UNSPACED.findall(text))


def decidable_size(size: tuple[int, int], floor: Floor) -> bool:
    return size[0] >= floor.words or size[1] >= floor.chars


def judge_line(text: str, lang: str, reading: Reading, *, floor: Floor | None = DEFAULT_FLOOR,
               min_margin: float = MIN_MARGIN) -> LineVerdict:
    """The verdict of one cleaned line (``floor`` None: the caller has applied its own floor)."""
    size = residue_size(text)
    if floor is not None and not decidable_size(size, floor):
        return LineVerdict(text, reading.language, reading.margin, size, UNDECIDED,
                           f"short: {size[0]} words, {size[1]} characters")
    if reading.language is None:
        return LineVerdict(text, None, 0.0, size, UNDECIDED, "no language")
    own = reading.language == lang
    margin = reading.margin if own else reading.confidences[0][1] - reading.confidence(lang)
    if margin < min_margin:
        versus = "the runner-up" if own else lang
        return LineVerdict(text, reading.language, margin, size, UNDECIDED,
                           f"unsure: {reading.language} {margin:.3f} above {versus} (< {min_margin})")
    return LineVerdict(text, reading.language, margin, size, PASS if own else FAIL)


def judge_lines(units: Sequence[str], lang: str, detector: Reader, *, floor: Floor | None = DEFAULT_FLOOR,
                min_margin: float = MIN_MARGIN) -> list[LineVerdict]:
    """Every unit's verdict, in order."""
    return [judge_line(unit, lang, detector.read(unit, clean=False), floor=floor, min_margin=min_margin)
            for unit in units]


def reference_verdicts(units: Sequence[str], lang: str, detector: Reader, *,
                       undecided_passes: bool) -> list[LineVerdict]:
    """Upstream's verdicts: every unit judged, a unit lingua leaves undecided passes or fails as upstream does."""
    out = []
    for unit in units:
        reading = detector.read(unit, clean=False)
        passed = reading.language == lang or (reading.language is None and undecided_passes)
        out.append(LineVerdict(unit, reading.language, reading.margin, residue_size(unit), PASS if passed else FAIL))
    return out


def line_level(verdicts: Sequence[LineVerdict]) -> bool | None:
    """False when a decided line fails, True when every decided line passes, None without a decided line."""
    decided = [verdict.verdict for verdict in verdicts if verdict.verdict != UNDECIDED]
    return None if not decided else FAIL not in decided


def failed_lines(verdicts: Sequence[LineVerdict]) -> list[dict]:
    """``[{"line", "detected"}]`` of the failing lines, in order."""
    return [{"line": v.text, "detected": v.language} for v in verdicts if v.verdict == FAIL]
