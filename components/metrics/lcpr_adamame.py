r"""AdaMame's LCPR rule (appendix C.3, after Marchisio et al., 2024): ``adamame`` and ``adamame_reference``.

``"adamame"`` (the default), with lingua:

* trace: the text before the last ``</think>``; a completion without ``</think>`` is scored
  whole (:func:`components.extraction.split_think`).
* line level: the trace is cleaned paragraph by paragraph
  (:func:`components.language.clean_for_detection`: code, URLs, LaTeX math, then LaTeX
  command names, arithmetic, digits) and split on newlines; every line that holds words
  (:func:`components.language.holds_words`: letters other than units, short labels, single
  letters and lone Greek letters) is judged by :mod:`components.metrics.lcpr_lines`: undecided
  when its residue is too short (under 3 words, or 5 characters of zh/ja/th) or lingua is not
  clearly sure (a margin under 0.3), else it passes when detected as the query language and fails
  otherwise. The trace fails when a decided line fails; ``None`` when no line is decided.
* word level, on the cleaned trace, judged for every trace (WPR then keeps the traces that
  pass the line level). Latin-script query languages: any letter outside the Latin script
  fails, except a lone Greek letter (``π``). Other query languages: letters of a foreign
  script fail (kana in Chinese, Han in Korean, Cyrillic in Japanese, ...), except the
  tolerated tokens of :func:`components.language.tolerated_token`: single Latin letters
  (variables), units (``cm``), runs of at most three capitals (labels ``AB``) other than
  capitalized English words (``OK``), lone Greek letters. ``Step``, ``so``, ``αβ`` fail.

``"adamame_reference"`` reproduces ``3_eval/metrics.py`` of the AdaMame code
(``dayeonki/adamame``) wherever it differs, for published numbers; same detector as the
caller's. The differences, and why the default departs from upstream:

==  =============================================  =====================================  ==================================================
#   upstream (and ``adamame_reference``)            ``adamame``                            why
==  =============================================  =====================================  ==================================================
1   no ``</think>``: the trace is empty, which      the whole completion is the trace      a model that never closes its think block still
    passes both levels                                                                      reasons in some language; an empty trace hides it
2   the trace ends at the *first* ``</think>``;     the last ``</think>``                  Qwen3-style prompts already hold an opening tag;
    every ``<think>`` is removed                                                            the answer follows the last closing one
3   math removal order: ``$$..$$``, ``\[..\]``,     code, URLs, ``\boxed`` (nested),       upstream's ``$..$`` swallows the words between two
    ``$..$`` (any text between two dollars,         display math, ``$..$`` by pandoc's     dollar amounts ("$5 and $6"), keeps the content of
    across lines), ``\(..\)``, environments,        rule, then command names, arithmetic   nested braces and English-looking variables
    ``\cmd{..}`` with one brace level, then         with variables and labels, digits
    runs of digits/operators not touching a word
4   line level splits first, then strips math       paragraphs are cleaned, then split     display math over several lines is math, not text
    line by line
5   every line is judged; one lingua leaves         a decided line must be detected as     a fragment (``Total: .``, ``So,``) gives lingua
    undecided passes                                the language; a short line, or one     nothing to decide on, and its guess failed
                                                    lingua is unsure of, is undecided      plainly single-language traces
6   a trace without letters passes                  ``None`` (not counted)                 nothing to judge is not a pass
7   word level, non-Latin languages: any run of     foreign-script runs, minus tolerated   ``x``, ``cm``, ``AB``, ``π`` are maths; Cyrillic
    two ASCII letters fails (``AB``, ``cm``);       tokens                                 in Japanese or kana in Chinese is confusion
    other scripts never fail
8   word level, Latin languages (de en es fr id     any non-Latin letter but a lone        ``π`` is a symbol; every Latin-script language
    it pt sw tr vi): any letter past U+024F         Greek letter; every Latin-script       deserves the check
    outside U+1E00-1EFF fails (``π`` too); other    language
    Latin-script languages always pass
9   word level only for traces whose line level     judged for every trace; the            same WPR
    passes                                          aggregate keeps line-passing traces
==  =============================================  =====================================  ==================================================

Measured on the labeled trace corpus (``python bench/lcpr_traces.py``: MGSM text in 11 languages between
a reasoning model's label lines, LaTeX and openers; problems 0-99, 1,100 single-language traces of 41-73
lines), ``adamame_reference`` fails the line level of 974 of 1,100 traces written in one language
(0.885 [0.865, 0.903]; 0.71-1.00 per language), ``adamame`` none (0 [0, 0.003]): upstream judges every
line, and a label line's residue is read as any language. Both find an injected foreign step in every trace.

Not reproduced (outside LCPR or outside this module): upstream's detector over its 12 MGSM
(or 10 MSVAMP) languages, where scoring builds one over ``BASE_LANGUAGES`` plus the scored
languages; upstream's per-item mean over samples before the corpus mean (the aggregate
averages rows); upstream's language consistency detects the raw trace whole (``lang_detected``
is the character-weighted majority of the cleaned lines).

>>> foreign_words("Donc 答え est π.", "fr"), foreign_words("まずStepでxとcmを計算ABC、OK", "ja")
(['答え'], ['Step', 'OK'])
>>> ReferenceRule().word_pass("先AB和cm", "zh"), AdaMameRule().word_pass("先AB和cm", "zh")
(False, True)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Protocol

from components.extraction import split_think
from components.language import (
    LETTER_CLASS,
    SCRIPT_RANGES,
    clean_for_detection,
    clean_paragraphs,
    has_letters,
    holds_words,
    scripts_of,
    tolerated_token,
    uses_latin_script,
)
from components.metrics.lcpr_lines import PASS, LineVerdict, judge_lines, line_level, reference_verdicts

if TYPE_CHECKING:
    from components.language import Reading

_FOREIGN_RUN_CACHE: dict[str, re.Pattern[str]] = {}
_GREEK = re.compile(f"[{SCRIPT_RANGES['greek']}]")
_NEUTRAL = "\u02b0-\u02ff\u2100-\u214f"  # modifier letters, letterlike symbols (ℓ, ℕ)


class Detector(Protocol):
    def detect(self, text: str, *, clean: bool = True) -> str | None: ...

    def read(self, text: str, *, clean: bool = True) -> Reading: ...


def _foreign_run_pattern(lang: str) -> re.Pattern[str]:
    if lang not in _FOREIGN_RUN_CACHE:
        native = "".join(SCRIPT_RANGES[s] for s in scripts_of(lang)) + _NEUTRAL
        _FOREIGN_RUN_CACHE[lang] = re.compile(f"(?:(?![{native}]){LETTER_CLASS})+")
    return _FOREIGN_RUN_CACHE[lang]


def _is_tolerated(run: str, lang: str) -> bool:
    if uses_latin_script(lang):
        return len(run) == 1 and bool(_GREEK.match(run))  # a lone Greek letter is a math symbol
    return tolerated_token(run)


def foreign_words(text: str, lang: str, *, clean: bool = True) -> list[str]:
    """Runs of letters foreign to ``lang``'s script that the word level counts as errors."""
    cleaned = clean_for_detection(text) if clean else text
    return [run for run in _foreign_run_pattern(lang).findall(cleaned) if not _is_tolerated(run, lang)]


def clean_trace(trace: str) -> str:
    """The trace cleaned for detection, paragraph by paragraph, one paragraph per line group."""
    return "\n".join(clean_paragraphs(trace))


class AdaMameRule:
    """The corrected AdaMame rule (see the module docstring)."""

    name = "adamame"
    needs_words = False

    def trace(self, completion: str) -> str:
        return split_think(completion).trace

    def line_units(self, trace: str, lang: str | None = None, *, cleaned: str | None = None) -> list[str]:
        lines = (clean_trace(trace) if cleaned is None else cleaned).split("\n")
        return [line for line in lines if holds_words(line)]

    def judge_lines(self, units: list[str], lang: str, detector: Detector) -> list[LineVerdict]:
        return judge_lines(units, lang, detector)

    def trace_verdict(self, verdicts: list[LineVerdict]) -> bool | None:
        return line_level(verdicts)

    def line_pass(self, units: list[str], lang: str, detector: Detector) -> bool | None:
        return self.trace_verdict(self.judge_lines(units, lang, detector))

    def word_pass(self, trace: str, lang: str, *, units: list[str] | None = None,
                  words: frozenset[str] | None = None, cleaned: str | None = None) -> bool | None:
        cleaned = clean_trace(trace) if cleaned is None else cleaned
        if not has_letters(cleaned):
            return None
        return not foreign_words(cleaned, lang, clean=False)


# Upstream's regexes, rewritten from its documented behaviour (order matters, see row 3).
_UPSTREAM_MATH = tuple(re.compile(p, f) for p, f in (
    (r"\$\$.*?\$\$", re.S), (r"\\\[.*?\\\]", re.S), (r"\$[^$]+?\$", 0), (r"\\\(.*?\\\)", re.S),
    (r"\\begin\{[^}]+\}.*?\\end\{[^}]+\}", re.S), (r"\\[a-zA-Z]+\{[^}]*\}", 0),
    (r"(?<!\w)[-\d+*/=^.,()\[\]{}%_]+(?!\w)", 0),
))
_UPSTREAM_NON_LATIN = frozenset("ar bn hi ja ko ru te th zh".split())
_UPSTREAM_LATIN = frozenset("de en es fr id it pt sw tr vi".split())
_ASCII_PAIR = re.compile(r"[a-zA-Z]{2,}")


def upstream_strip_math(text: str) -> str:
    """Math removal as upstream's ``strip_math`` does it (row 3 of the table)."""
    for pattern in _UPSTREAM_MATH:
        text = pattern.sub(" ", text)
    return text.strip()


def _upstream_latin_letter(char: str) -> bool:
    return not char.isalpha() or ord(char) <= 0x024F or 0x1E00 <= ord(char) <= 0x1EFF


class ReferenceRule:
    """AdaMame's code as published (rows 1-9 of the module docstring's table)."""

    name = "adamame_reference"
    needs_words = False

    def trace(self, completion: str) -> str:
        head, tag, _ = completion.partition("</think>")
        return head.replace("<think>\n", "").replace("<think>", "").strip() if tag else ""

    def line_units(self, trace: str, lang: str | None = None, *, cleaned: str | None = None) -> list[str]:
        stripped = (upstream_strip_math(line).strip() for line in trace.split("\n"))
        return [line for line in stripped if line]

    def judge_lines(self, units: list[str], lang: str, detector: Detector) -> list[LineVerdict]:
        return reference_verdicts(units, lang, detector, undecided_passes=True)

    def trace_verdict(self, verdicts: list[LineVerdict]) -> bool:
        return all(verdict.verdict == PASS for verdict in verdicts)

    def line_pass(self, units: list[str], lang: str, detector: Detector) -> bool:
        return self.trace_verdict(self.judge_lines(units, lang, detector))

    def word_pass(self, trace: str, lang: str, *, units: list[str] | None = None,
                  words: frozenset[str] | None = None, cleaned: str | None = None) -> bool:
        text = upstream_strip_math(trace)
        if lang in _UPSTREAM_NON_LATIN:
            return _ASCII_PAIR.search(text) is None
        if lang in _UPSTREAM_LATIN:
            return all(_upstream_latin_letter(char) for char in text)
        return True
