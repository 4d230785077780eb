"""The Language Confusion Benchmark's LPR/WPR rule (Marchisio et al., 2024): ``lcb`` and ``lcb_reference``.

``"lcb"`` (corrected), with lingua instead of fastText's ``lid.176`` (which cannot be
downloaded everywhere):

* trace: as the ``adamame`` rule (text before the last ``</think>``, else the completion);
* lines are cut at the first ``"\\nQ:"`` and cleaned like the AdaMame rule; a line is kept when its
  residue (what is judged) has at least five tokens, counted after deleting ASCII punctuation (em
  dashes become spaces, Arabic commas go): whitespace tokens, and in scripts written without spaces
  (zh, ja, th) each character counts as a token;
* each kept line that holds words must be detected as the query language, judged by
  :mod:`components.metrics.lcpr_lines` with its margin (a line lingua is not clearly sure of is
  undecided); a line not kept is undecided too; ``None`` when no line is decided;
* word level: no Latin-letter run of the kept, cleaned lines is in the English word list
  (:func:`load_english_words`: entries with ``str.islower()`` and more than 3 characters;
  case-sensitive); judged for every non-Latin-script query language, ``None`` for the others.

``"lcb_reference"`` reproduces ``compute_metrics.py`` of ``for-ai/language-confusion`` wherever
it differs, with the caller's detector in place of fastText (a line is an error when it is
not detected as the query language, undecided included):

==  ============================================  ==========================================  ==============================================
#   upstream (and ``lcb_reference``)               ``lcb``                                     why
==  ============================================  ==========================================  ==============================================
1   ASCII punctuation is deleted before the        punctuation only decides the token count;  ``step-by-step`` (upstream ``stepbystep``) and
    word check; non-ASCII quotes stay              the word check reads letter runs            ``«total»`` (kept whole) are English words
2   Chinese lines are tokenized by jieba, which    whitespace tokens; each Han, kana or Thai   five jieba tokens can be two English words and
    counts every space as a token; Japanese by     character counts one                        their spaces ("The answer is 8" is kept there);
    fugashi (MeCab, UniDic); others by spaces                                                  a character count needs no dictionary
3   the detector reads the line as it is (digits,  the line cleaned like the AdaMame rule      math pulls detection toward English
    LaTeX and all)
4   WPR for ar, hi, ja, ko, ru, zh only            every non-Latin-script language (also th,   the check applies to any non-Latin script
                                                   bn, te)
5   word tokens are the tokenizer's (``dont``)     letter runs (``don``, ``t``)                no tokenizer is needed
6   a line with letters only in tolerated tokens   such a line is not checked                  ``AB = 5 cm`` says nothing about the language
    is detected like any other
7   fastText's label counts when its score         lingua's top-1, undecided under a margin    lingua is the detector of every other metric
    exceeds 0.3, else "unknown"                    of 0.3 (``lcpr_lines``)
8   the five tokens are counted on the line as     on the residue that is judged               ``So, Total distance = 5 + 3 = 8`` has five
    written                                                                                    tokens; lingua would read ``So, Total distance =``
==  ============================================  ==========================================  ==============================================

Measured on the labeled trace corpus (``python bench/lcpr_traces.py``, problems 0-99, 1,100 single-language
traces), ``lcb_reference`` fails the line level of 338 (0.307 [0.281, 0.335]; de 0.75, en 0.82, es 0.82,
zh 0.97, the other languages at most 0.01), ``lcb`` of none; ``lcb`` finds an injected foreign sentence in
0.657 of the traces (its five-token floor leaves the shorter ones undecided), ``adamame`` in 0.989.

Row 2 uses jieba and fugashi themselves (``pip install 'polyreason[reference]'``; fugashi
reads the UniDic-lite dictionary, upstream the full UniDic, which is downloaded at run time).
Neither rule uses fastText's model (row 7: both read lingua's top-1). Not reproduced: upstream's
averages give 1.0 to a language with no kept line (here ``None``), and it averages per
(source, language) first.
"""

from __future__ import annotations

import functools
import logging
import re
import string
from pathlib import Path

from components.extraction import split_think
from components.language import SCRIPT_RANGES, clean_for_detection, holds_words, uses_latin_script
from components.metrics.lcpr_adamame import Detector
from components.metrics.lcpr_lines import PASS, UNDECIDED, LineVerdict, judge_lines, line_level, reference_verdicts

_LATIN_WORD = re.compile(f"[{SCRIPT_RANGES['latin']}]+")
_PUNCTUATION = str.maketrans({**{c: None for c in string.punctuation}, "—": " ", "،": None})
_UNSPACED = re.compile(f"[{SCRIPT_RANGES['han']}{SCRIPT_RANGES['kana']}{SCRIPT_RANGES['thai']}]")
MIN_TOKENS = 5
REFERENCE_WPR_LANGUAGES = frozenset("ar hi ja ko ru zh".split())


@functools.lru_cache(maxsize=4)
def load_english_words(path: str | Path) -> frozenset[str]:
    """The LCB English word list: entries with ``str.islower()`` and ``len > 3``."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return frozenset(word for word in (line.strip() for line in lines) if word.islower() and len(word) > 3)


def _require_words(words: frozenset[str] | None, rule: str) -> frozenset[str]:
    if words is None:
        raise ValueError(f"the {rule!r} rule needs the English word list (words=load_english_words(path))")
    return words


def _token_count(line: str) -> int:
    """Whitespace tokens after punctuation deletion; zh/ja/th characters count one each."""
    stripped = line.translate(_PUNCTUATION)
    tokens = stripped.split()
    if len(tokens) >= MIN_TOKENS or not _UNSPACED.search(stripped):
        return len(tokens)
    return len(_UNSPACED.findall(stripped)) + len(_UNSPACED.sub(" ", stripped).split())


def english_words_pass(units: list[str], lang: str, words: frozenset[str]) -> bool | None:
    """``lcb`` word level over kept, cleaned lines: no Latin-letter run is an English word.

    None for Latin-script languages or no line.
    """
    if uses_latin_script(lang) or not units:
        return None
    return not any(word in words for unit in units for word in _LATIN_WORD.findall(unit))


class LcbRule:
    """The corrected LCB rule (see the module docstring)."""

    name = "lcb"
    needs_words = True

    def trace(self, completion: str) -> str:
        return split_think(completion).trace

    def line_units(self, trace: str, lang: str | None = None, *, cleaned: str | None = None) -> list[str]:
        """Every cleaned line that holds words; the five-token floor is the verdict's (``kept``)."""
        lines = trace.split("\nQ:", 1)[0].split("\n")
        return [line for line in map(clean_for_detection, lines) if holds_words(line)]

    def judge_lines(self, units: list[str], lang: str, detector: Detector) -> list[LineVerdict]:
        verdicts = judge_lines(units, lang, detector, floor=None)
        return [verdict if kept(verdict.text) else verdict._replace(verdict=UNDECIDED, reason=_short(verdict.text))
                for verdict in verdicts]

    def trace_verdict(self, verdicts: list[LineVerdict]) -> bool | None:
        return line_level(verdicts)

    def line_pass(self, units: list[str], lang: str, detector: Detector) -> bool | None:
        return self.trace_verdict(self.judge_lines(units, lang, detector))

    def word_pass(self, trace: str, lang: str, *, units: list[str] | None = None,
                  words: frozenset[str] | None = None, cleaned: str | None = None) -> bool | None:
        words = _require_words(words, self.name)
        units = self.line_units(trace, lang) if units is None else units
        return english_words_pass([unit for unit in units if kept(unit)], lang, words)


def kept(residue: str) -> bool:
    """LCB's floor on the residue that is judged: five tokens of the cleaned line (``_token_count``)."""
    return _token_count(residue) >= MIN_TOKENS


def _short(residue: str) -> str:
    return f"short: {_token_count(residue)} tokens < {MIN_TOKENS}"


@functools.cache
def _jieba():
    try:
        import jieba
    except ImportError as exc:
        raise ImportError("the 'lcb_reference' rule tokenizes Chinese with jieba: "
                          "pip install 'polyreason[reference]'") from exc
    jieba.setLogLevel(logging.WARNING)  # its dictionary-loading messages
    jieba.initialize()
    return jieba


@functools.cache
def _mecab():
    try:
        from fugashi import Tagger
    except ImportError as exc:
        raise ImportError("the 'lcb_reference' rule tokenizes Japanese with fugashi (UniDic): "
                          "pip install 'polyreason[reference]'") from exc
    return Tagger("-O wakati -b 50000")


@functools.lru_cache(maxsize=65536)
def reference_tokens(line: str, lang: str) -> tuple[str, ...]:
    """Upstream's tokens: jieba for zh (spaces are tokens), fugashi for ja, else whitespace."""
    if lang == "zh":
        return tuple(_jieba().cut(line))
    if lang == "ja":
        return tuple(_mecab().parse(line).split())
    return tuple(line.split())


def reference_lines(trace: str) -> list[str]:
    """Upstream's normalization: cut at ``"\\nQ:"``, strip, delete punctuation, split lines."""
    text = trace.split("\nQ:")[0].strip().translate(_PUNCTUATION)
    return text.split("\n")


class ReferenceRule:
    """The LCB code as published (rows 1-6 and 8 of the module docstring's table)."""

    name = "lcb_reference"
    needs_words = True

    def trace(self, completion: str) -> str:
        return split_think(completion).trace

    def line_units(self, trace: str, lang: str | None = None, *, cleaned: str | None = None) -> list[str]:
        """Kept lines: normalized lines with at least five of ``lang``'s tokens."""
        if lang is None:
            raise ValueError("the 'lcb_reference' rule tokenizes per language: pass lang")
        return [line for line in reference_lines(trace) if len(reference_tokens(line, lang)) >= MIN_TOKENS]

    def judge_lines(self, units: list[str], lang: str, detector: Detector) -> list[LineVerdict]:
        return reference_verdicts(units, lang, detector, undecided_passes=False)

    def trace_verdict(self, verdicts: list[LineVerdict]) -> bool | None:
        return all(verdict.verdict == PASS for verdict in verdicts) if verdicts else None

    def line_pass(self, units: list[str], lang: str, detector: Detector) -> bool | None:
        return self.trace_verdict(self.judge_lines(units, lang, detector))

    def word_pass(self, trace: str, lang: str, *, units: list[str] | None = None,
                  words: frozenset[str] | None = None, cleaned: str | None = None) -> bool | None:
        words = _require_words(words, self.name)
        units = self.line_units(trace, lang) if units is None else units
        if lang not in REFERENCE_WPR_LANGUAGES or not units:
            return None
        return not any(token.strip() in words for unit in units for token in reference_tokens(unit, lang))
