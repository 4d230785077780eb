"""The verifier families of the verifier-bias audit, over one shared answer extraction.

Verifiers follow "Multilingual verifier bias in RLVR" (arXiv 2608.20362, sections 3-4): proxy
rewards (``exact``, ``numeric``, ``math_verify``, ``hybrid``) are audited against the
``trusted`` reference (language-aware normalization from :mod:`components.numbers`, then
math-verify). All verifiers judge the same answer, found by :func:`components.extraction.extract`
in the ``mode`` the caller asks for (``"lenient"`` by default, ``"strict"``: the last boxed
answer after ``</think>`` only); the :class:`Verdict` says how it was found (``method``).

Numbers: a gold that is an integer makes a lone ``,``/``.`` before three digits group
thousands in every language (``1,000`` in French is 1000), so the reference verifier is not
itself biased by the answer's language; non-integers agree at
:data:`components.numbers.DECIMAL_PLACES` decimal places; pairs, intervals and lists are
never one number.

math-verify: a boxed answer reaches it as math (``$…$``, with the currency ``\\$`` removed:
``\\boxed{\\$18}`` is 18, ``\\boxed{-2,1}`` the set {-2, 1}). When the lenient extraction
found no answer at all, math-verify reads the whole response with its own extraction (a LaTeX
answer without digits, such as ``$\\pi$``, is not lost); strict mode never does.

math-verify 0.9 times out with ``signal.alarm``, which raises off the main thread; there
this module passes ``parsing_timeout=None``/``timeout_seconds=None`` and bounds the work by
capping inputs at :data:`MATH_VERIFY_MAX_CHARS` characters instead.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from fractions import Fraction
from functools import cache, lru_cache
from typing import Callable, Protocol

from components.extraction import (
    ANSWER_PHRASES,
    Mode,
    ThinkSplit,
    extract,
    extract_answer,
    split_think,
)
from components.numbers import ascii_fold, format_number, normalize_number, parse_number, same_value

__all__ = ["ThinkSplit", "split_think", "extract_answer", "Verdict", "Verifier", "VERIFIERS",
           "get_verifier", "verify", "normalize_number", "choice_letter", "ANSWER_PHRASES"]

MATH_VERIFY_MAX_CHARS = 1000
_CHOICE = re.compile(r"\(?([A-J])\)?(?:[.:)\]]|\s|$)")
_LOCATED = ("boxed", "phrase", "last_number", "short_response", "given")
_SUPERSCRIPT_POWERS = str.maketrans({sup: f"^{{{digit}}}" for digit, sup in enumerate("⁰¹²³⁴⁵⁶⁷⁸⁹")})


def choice_letter(text: str | None) -> str | None:
    """Multiple-choice letter A-J of an answer (``(C)``, ``**C.**``, ``\\text{C}``), else None.

    >>> choice_letter("(C) 42"), choice_letter("Ｃ"), choice_letter("Cats")
    ('C', 'C', None)
    """
    if not text:
        return None
    core = re.sub(r"\\text\w*\{([^{}]*)\}", r"\1", ascii_fold(text)).strip(" $*_`.。")
    match = _CHOICE.match(core)
    return match.group(1) if match else None


@dataclass(frozen=True)
class Verdict:
    """A verifier's judgement; ``method``: how the answer was found (see :mod:`components.extraction`).

    ``method`` is ``boxed``, ``phrase``, ``last_number``, ``short_response`` or ``none``, and
    ``given`` when the caller passed the answer itself (``extract=False``).
    """

    correct: bool
    extracted: str | None
    normalized: str | None
    gold_normalized: str | None
    verifier: str
    method: str = "none"


class Verifier(Protocol):
    name: str

    def __call__(self, text: str, gold: str, lang: str, *, extract: bool = True,
                 mode: Mode = "lenient") -> Verdict: ...


def _math_verify_input(text: str, boxed: bool = False) -> str:
    """Text for math-verify: boxed content as math with currency ``\\$`` dropped; bare LaTeX wrapped."""
    text = text[-MATH_VERIFY_MAX_CHARS:]
    if boxed:
        return "$" + text.replace("\\$", " ").replace("$", " ").strip() + "$"
    if any(d in text for d in ("$", "\\(", "\\[", "\\boxed")):  # math-verify finds these itself
        return text
    latex_like = any(c in text for c in "\\^_{}") or re.match(r"^\s*[(\[].*,.*[)\]]\s*$", text)
    return f"${text}$" if latex_like else text


@lru_cache(maxsize=8192)
def _mv_parse(text: str, on_main_thread: bool) -> tuple:
    from math_verify import parse

    timeout = 5 if on_main_thread else None
    return tuple(parse(text, parsing_timeout=timeout))


def _math_verify(answer: str | None, gold: str, boxed: bool = False) -> tuple[bool, str | None, str | None]:
    """(equal, answer form, gold form) by math-verify; thread-safe (no alarm off the main thread)."""
    from math_verify import verify as mv_verify

    main = threading.current_thread() is threading.main_thread()
    gold_parsed = _mv_parse(_math_verify_input(gold), main)
    parsed = _mv_parse(_math_verify_input(answer, boxed), main) if answer else ()
    forms = [str(p[-1]) if p else None for p in (parsed, gold_parsed)]
    if not parsed or not gold_parsed:
        return False, forms[0], forms[1]
    equal = mv_verify(list(gold_parsed), list(parsed), timeout_seconds=5 if main else None)
    return equal, forms[0], forms[1]


def _numbers(answer: str | None, gold: str, lang: str) -> tuple[Fraction | None, Fraction | None]:
    """(answer value, gold value); an integer gold reads lone three-digit groups as thousands."""
    gold_value = parse_number(gold, None)
    grouping = gold_value is not None and gold_value.denominator == 1
    return parse_number(answer, lang, grouping=grouping), gold_value


def _numeric_verdict(answer: str | None, gold: str, lang: str) -> tuple[bool, str | None, str | None] | None:
    """(equal, forms) when both answer and gold are numbers, else None."""
    value, gold_value = _numbers(answer, gold, lang)
    if value is None or gold_value is None:
        return None
    return same_value(value, gold_value), format_number(value), format_number(gold_value)


@dataclass(frozen=True)
class _Found:
    answer: str | None
    method: str
    latex_source: str | None  # what math-verify reads


class _Base:
    name = ""

    def __call__(self, text: str, gold: str, lang: str, *, extract: bool = True,
                 mode: Mode = "lenient") -> Verdict:
        found = _find(text, extract, mode)
        correct, normalized, gold_normalized = self.judge(found, gold, lang)
        return Verdict(bool(correct), found.answer, normalized, gold_normalized, self.name, found.method)

    def judge(self, found: _Found, gold: str, lang: str):  # pragma: no cover - interface
        raise NotImplementedError


def _find(text: str, extract_first: bool, mode: Mode) -> _Found:
    if not extract_first:
        return _Found(text, "given", text)
    found = extract(text, mode=mode)
    located = mode == "strict" or found.method in _LOCATED
    return _Found(found.answer, found.method, found.answer if located else found.response)


def _math_verify_found(found: _Found, gold: str, fold: bool = False) -> tuple[bool, str | None, str | None]:
    """math-verify on what was found; ``fold``: native digits to ASCII and ``2²`` to ``2^{2}`` first
    (math-verify 0.9 reads a superscript digit as nothing: ``2²`` is 2 to it)."""
    source = found.latex_source
    if fold and source:
        source = ascii_fold(source).translate(_SUPERSCRIPT_POWERS)
    return _math_verify(source, gold, boxed=found.method == "boxed")


class ExactVerifier(_Base):
    """String equality of the stripped answer and gold (the paper's exact-match proxy)."""

    name = "exact"

    def judge(self, found, gold, lang):
        normalized = found.answer.strip() if found.answer is not None else None
        return normalized == gold.strip(), normalized, gold.strip()


class NumericVerifier(_Base):
    """Equality of language-aware normalized numbers (:func:`components.numbers.parse_number`)."""

    name = "numeric"

    def judge(self, found, gold, lang):
        verdict = _numeric_verdict(found.answer, gold, lang)
        if verdict is not None:
            return verdict
        value, _ = _numbers(found.answer, gold, lang)
        return False, None if value is None else format_number(value), normalize_number(gold, None)


class MathVerifyVerifier(_Base):
    """math-verify's parse/verify on the answer (its own extraction on the response if none)."""

    name = "math_verify"

    def judge(self, found, gold, lang):
        return _math_verify_found(found, gold)


class TrustedVerifier(_Base):
    """Reference: numbers decided by normalization, letters A-J compared, the rest by math-verify."""

    name = "trusted"

    def judge(self, found, gold, lang):
        verdict = _numeric_verdict(found.answer, gold, lang)
        if verdict is not None:
            return verdict
        gold_letter = choice_letter(gold) if len(gold.strip(" ()$*.")) == 1 else None
        if gold_letter:
            answer = found.answer or ""
            letter = choice_letter(answer) or choice_letter(extract_answer(answer, fallback=False))
            return letter == gold_letter, letter, gold_letter
        return _math_verify_found(found, gold, fold=True)


class HybridVerifier(_Base):
    """Numeric equality first; math-verify when numeric normalization does not accept."""

    name = "hybrid"

    def judge(self, found, gold, lang):
        numeric = _NUMERIC.judge(found, gold, lang)
        return numeric if numeric[0] else _MATH_VERIFY.judge(found, gold, lang)


_NUMERIC, _MATH_VERIFY = NumericVerifier(), MathVerifyVerifier()


VERIFIERS: dict[str, Callable[[], Verifier]] = {
    "exact": ExactVerifier,
    "numeric": NumericVerifier,
    "math_verify": MathVerifyVerifier,
    "trusted": TrustedVerifier,
    "hybrid": HybridVerifier,
}


@cache
def get_verifier(name: str) -> Verifier:
    """The verifier registered as ``name`` (one shared instance; verifiers are stateless).

    >>> get_verifier("numeric")("答えは１８です", "18", "ja").correct
    True
    """
    if name not in VERIFIERS:
        raise ValueError(f"unknown verifier {name!r}; known: {', '.join(sorted(VERIFIERS))}")
    return VERIFIERS[name]()


def verify(name: str, text: str, gold: str, lang: str, *, extract: bool = True,
           mode: Mode = "lenient") -> Verdict:
    """Judge ``text`` (a completion, or the answer itself with ``extract=False``) against ``gold``.

    ``mode``: answer extraction, ``"lenient"`` (boxed, phrase, then fallbacks) or ``"strict"``
    (the last boxed answer after ``</think>`` only); see :mod:`components.extraction`.

    >>> verify("trusted", "<think>…</think>\\\\boxed{3万}", "30000", "ja").correct
    True
    >>> verify("exact", "３万", "30000", "ja", extract=False).correct
    False
    >>> verdict = verify("trusted", "<think>…</think>So 18 in all.", "18", "en")
    >>> verdict.correct, verdict.method, verify("trusted", "So 18 in all.", "18", "en", mode="strict").method
    (True, 'last_number', 'none')
    """
    return get_verifier(name)(text, gold, lang, extract=extract, mode=mode)
