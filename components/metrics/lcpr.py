"""Language Confusion Pass Rate (LCPR) of reasoning traces, two named rules.

``"adamame"`` follows AdaMame appendix C.3 (after Marchisio et al., 2024), with lingua:

* line level: the trace is cleaned paragraph by paragraph
  (``components.language.clean_for_detection``: LaTeX, code, URLs, arithmetic, digits) and
  split on newlines; every line that still holds a letter must be detected as the query
  language (lines with no letter left are ignored). ``None`` when no line holds a letter.
* word level, on the cleaned trace, judged for every trace (``WPR`` then keeps the traces
  that pass the line level). Latin-script query languages: any letter outside the Latin
  script fails. Other query languages: letters of a foreign script fail (kana in Chinese,
  Han in Korean, Cyrillic in Japanese, ...); for Latin
  letters a *word* is a run of two or more Latin letters, except SI-style units (``cm``,
  ``km``, ``kg``, ...) and runs of at most three capitals (geometry labels ``AB``, ``ABC``),
  so one-letter variables (``x``) pass and ``Step``/``so`` fail. In every language a single
  Greek letter standing alone is a math symbol (``π``, ``θ``) and passes; two or more Greek
  letters in a row (a Greek word) fail.
* ``LPR = |C \\ C_line| / |C|``; ``WPR`` over the traces without line errors;
  ``LCPR = 2 * LPR * WPR / (LPR + WPR)``.

``"lcb"`` is the language-confusion-benchmark variant (Marchisio et al., 2024;
``shared/data/language_confusion/PROVENANCE.md``): lines are cut at the first ``"\\nQ:"``, ASCII
punctuation is deleted, em dashes become spaces, Arabic commas go; lines with fewer than five
tokens are dropped (whitespace tokens; in scripts written without spaces, zh/ja/th, each
character counts as a token: upstream segments with jieba/fugashi, which are not used here);
each kept line, cleaned like the AdaMame rule (the deleted punctuation only decides the token
count), must be detected as the query language (lingua instead of fastText). Word level: no
Latin-letter run of the kept, cleaned lines may be in the English word list (entries with
``str.islower()`` and more than 3 characters; 81,995 words; case-sensitive; letter runs stand
in for upstream's whitespace tokens, so "don't" gives "don" and "t", not "dont"). As upstream,
the word level is reported for non-Latin-script languages only (``None`` elsewhere).

>>> lcpr_from_rates(1.0, 0.5), lcpr_from_rates(0.0, 1.0)
(0.6666666666666666, 0.0)
>>> foreign_words("Donc 答え est π.", "fr"), foreign_words("まずStepでxとcmを計算ABC", "ja")
(['答え'], ['Step'])
"""

from __future__ import annotations

import functools
import re
import string
from pathlib import Path
from typing import Protocol

from components.language import (
    LETTER_CLASS,
    SCRIPT_RANGES,
    clean_for_detection,
    clean_paragraphs,
    has_letters,
    scripts_of,
)

RULES = ("adamame", "lcb")

UNIT_WORDS = frozenset(
    {"cm", "mm", "km", "kg", "mg", "ml", "dl", "cl", "kl", "ha", "min", "sec", "hr", "hrs",
     "mph", "kmh", "kcal", "cal", "am", "pm", "kw", "kwh"}
)

_FOREIGN_RUN_CACHE: dict[str, re.Pattern[str]] = {}
_LATIN = re.compile(f"[{SCRIPT_RANGES['latin']}]")
_GREEK = re.compile(f"[{SCRIPT_RANGES['greek']}]")
_NEUTRAL = "\u02b0-\u02ff\u2100-\u214f"  # modifier letters, letterlike symbols (ℓ, ℕ)
_LATIN_WORD = re.compile(f"[{SCRIPT_RANGES['latin']}]+")
_LCB_PUNCT = str.maketrans({**{c: None for c in string.punctuation}, "—": " ", "،": None})
_UNSPACED = re.compile(f"[{SCRIPT_RANGES['han']}{SCRIPT_RANGES['kana']}{SCRIPT_RANGES['thai']}]")
_LCB_MIN_TOKENS = 5


class Detector(Protocol):
    def detect(self, text: str, *, clean: bool = True) -> str | None: ...


def _foreign_run_pattern(lang: str) -> re.Pattern[str]:
    if lang not in _FOREIGN_RUN_CACHE:
        native = "".join(SCRIPT_RANGES[s] for s in scripts_of(lang)) + _NEUTRAL
        _FOREIGN_RUN_CACHE[lang] = re.compile(f"(?:(?![{native}]){LETTER_CLASS})+")
    return _FOREIGN_RUN_CACHE[lang]


def _is_tolerated(run: str, lang: str) -> bool:
    if len(run) == 1 and _GREEK.match(run):
        return True  # a lone Greek letter is a math symbol
    if scripts_of(lang) == ("latin",) or not all(_LATIN.match(ch) for ch in run):
        return False
    return len(run) == 1 or run.lower() in UNIT_WORDS or (run.isupper() and len(run) <= 3)


def foreign_words(text: str, lang: str, *, clean: bool = True) -> list[str]:
    """Runs of letters foreign to ``lang``'s script that the AdaMame word level counts as errors."""
    cleaned = clean_for_detection(text) if clean else text
    return [run for run in _foreign_run_pattern(lang).findall(cleaned) if not _is_tolerated(run, lang)]


@functools.lru_cache(maxsize=4)
def load_english_words(path: str | Path) -> frozenset[str]:
    """The LCB English word list: entries with ``str.islower()`` and ``len > 3``."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return frozenset(word for word in (line.strip() for line in lines) if word.islower() and len(word) > 3)


def _lcb_token_count(line: str) -> int:
    """Whitespace tokens after LCB's punctuation deletion; zh/ja/th characters count one each."""
    stripped = line.translate(_LCB_PUNCT)
    tokens = stripped.split()
    if len(tokens) >= _LCB_MIN_TOKENS or not _UNSPACED.search(stripped):
        return len(tokens)
    return len(_UNSPACED.findall(stripped)) + len(_UNSPACED.sub(" ", stripped).split())


def _lcb_lines(trace: str) -> list[str]:
    """Raw lines LCB keeps: cut at ``"\\nQ:"``, at least five tokens."""
    lines = trace.split("\nQ:", 1)[0].split("\n")
    return [line for line in lines if _lcb_token_count(line) >= _LCB_MIN_TOKENS]


def clean_trace(trace: str) -> str:
    """The trace cleaned for detection, paragraph by paragraph, one paragraph per line group."""
    return "\n".join(clean_paragraphs(trace))


def line_units(trace: str, rule: str = "adamame", *, cleaned: str | None = None) -> list[str]:
    """The cleaned, letter-bearing lines whose language the line level checks.

    ``cleaned``: ``clean_trace(trace)`` when the caller already has it (rule adamame).
    """
    if rule == "adamame":
        lines = (clean_trace(trace) if cleaned is None else cleaned).split("\n")
    elif rule == "lcb":
        lines = [clean_for_detection(line) for line in _lcb_lines(trace)]
    else:
        raise ValueError(f"unknown LCPR rule {rule!r}; known: {list(RULES)}")
    return [line for line in lines if has_letters(line)]


def units_pass(units: list[str], lang: str, detector: Detector) -> bool | None:
    """True when every (cleaned) unit is detected as ``lang``; None for no unit."""
    if not units:
        return None
    return all(detector.detect(unit, clean=False) == lang for unit in units)


def line_pass(trace: str, lang: str, detector: Detector, rule: str = "adamame",
              words: frozenset[str] | None = None) -> bool | None:
    """True when every checked line is detected as ``lang``; None when no line holds a letter."""
    return units_pass(line_units(trace, rule), lang, detector)


def word_pass(trace: str, lang: str, detector: Detector | None = None, rule: str = "adamame",
              words: frozenset[str] | None = None, *, cleaned: str | None = None) -> bool | None:
    """True when no word-level error is found; None when the check does not apply.

    The word level needs no detector; the parameter keeps the scorers' signatures alike.
    """
    if rule == "adamame":
        cleaned = clean_trace(trace) if cleaned is None else cleaned
        if not has_letters(cleaned):
            return None
        return not foreign_words(cleaned, lang, clean=False)
    if rule != "lcb":
        raise ValueError(f"unknown LCPR rule {rule!r}; known: {list(RULES)}")
    if words is None:
        raise ValueError("the 'lcb' rule needs the English word list (words=load_english_words(path))")
    return english_words_pass(line_units(trace, "lcb"), lang, words)


def english_words_pass(units: list[str], lang: str, words: frozenset[str]) -> bool | None:
    """LCB word level over kept, cleaned lines: no Latin-letter run is an English word.

    None for Latin-script languages (upstream reports WPR for non-Latin ones only) or no line.
    """
    if scripts_of(lang) == ("latin",) or not units:
        return None
    return not any(word in words for unit in units for word in _LATIN_WORD.findall(unit))


def lcpr_from_rates(lpr: float, wpr: float) -> float:
    """Harmonic mean of the line- and word-level pass rates (0 when both are 0)."""
    return 0.0 if lpr + wpr == 0 else 2 * lpr * wpr / (lpr + wpr)
