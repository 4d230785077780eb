"""Final-answer extraction and the verifier families of the verifier-bias audit.

Verifiers follow "Multilingual verifier bias in RLVR" (arXiv 2608.20362, sections 3-4): proxy
rewards (``exact``, ``numeric``, ``math_verify``, ``hybrid``) are audited against the
``trusted`` reference (language-aware normalization from :mod:`components.numbers`, then
math-verify). All verifiers judge the same extracted answer:

1. ``split_think``: the response is the text after the last ``</think>`` (DeepSeek-R1/Qwen3 format).
2. the last ``\\boxed{…}`` / ``\\fbox{…}`` (nested braces), as in MATH/open-r1;
3. else the last localized final-answer phrase of any language in :data:`ANSWER_PHRASES`
   (models often answer in another language than asked), cut at the end of its sentence;
4. else the last number of the response (lm-eval MGSM "flexible-extract" convention), with
   its CJK magnitude and percent; the original characters are kept (``１８`` stays ``１８``);
5. else a short one-line response (≤ :data:`SHORT_RESPONSE_CHARS` characters) is the answer
   itself (``十八``, ``C``).

When 4 or 5 found nothing better than a bare number, the math-verify path reads the whole
response with math-verify's own extraction (a LaTeX answer outside ``\\boxed`` is not lost).

math-verify 0.9 times out with ``signal.alarm``, which raises off the main thread; there
this module passes ``parsing_timeout=None``/``timeout_seconds=None`` and bounds the work by
capping inputs at :data:`MATH_VERIFY_MAX_CHARS` characters instead.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Callable, Protocol

from components.numbers import ascii_fold, last_number_span, normalize_number, parse_number

__all__ = ["ThinkSplit", "split_think", "extract_answer", "Verdict", "Verifier", "VERIFIERS",
           "get_verifier", "verify", "normalize_number", "choice_letter", "ANSWER_PHRASES"]

MATH_VERIFY_MAX_CHARS = 1000
SHORT_RESPONSE_CHARS = 40
ANSWER_PHRASES: dict[str, tuple[str, ...]] = {
    "en": (r"the (?:final )?answer is", r"(?:final )?answer\s*:"),
    "fr": (r"la réponse (?:finale )?est", r"réponse(?: finale)?\s*:"),
    "es": (r"la respuesta (?:final )?es", r"respuesta(?: final)?\s*:"),
    "pt": (r"a resposta (?:final )?é", r"resposta(?: final)?\s*:"),
    "de": (r"die (?:endgültige )?antwort (?:lautet|ist)", r"antwort\s*:"),
    "it": (r"la risposta (?:finale )?è", r"risposta\s*:"),
    "ru": (r"ответ\s*(?::|—|–|-|равен|будет)",),
    "zh": (r"答案(?:是|为|為|:|：)", r"答\s*(?::|：)"),
    "ja": (r"答えは", r"答え\s*(?::|：)", r"解答\s*(?::|：)"),
    "ko": (r"(?:정)?답은", r"(?:정)?답\s*(?::|：)"),
    "th": (r"คำตอบ(?:สุดท้าย)?(?:คือ|\s*:)",),
    "sw": (r"jibu (?:la mwisho )?ni", r"jibu\s*:"),
    "bn": (r"উত্তর (?:হল|হলো|হচ্ছে)", r"উত্তর\s*(?::|ঃ)"),
    "te": (r"సమాధానం\s*(?::|=)?", r"జవాబు\s*:?"),
    "vi": (r"đáp án (?:là|:)", r"đáp án\s*:", r"câu trả lời (?:là|:)"),
    "ar": (r"الإجابة (?:النهائية )?(?:هي|:)", r"الجواب (?:هو|:)"),
    "id": (r"jawabannya adalah", r"jawaban\s*:"),
    "hi": (r"उत्तर है", r"उत्तर\s*:"),
}
_PHRASE = re.compile("|".join(p for ps in ANSWER_PHRASES.values() for p in ps), re.IGNORECASE)
_SENTENCE_END = re.compile(r"\n|[。！!？?।॥؟]|\.(?!\d)|です|でした|になります|となります|입니다|이다|이에요|예요")
_BOXED = re.compile(r"\\(?:boxed|fbox)\s*(\{)?")
_CHOICE = re.compile(r"\(?([A-J])\)?(?:[.:)\]]|\s|$)")
_THINK_CLOSE = "</think>"


@dataclass(frozen=True)
class ThinkSplit:
    trace: str
    response: str
    has_think: bool


def split_think(completion: str) -> ThinkSplit:
    """Split ``<think>trace</think>response`` at the last closing tag.

    >>> split_think("<think>3*6=18</think>The answer is 18.")
    ThinkSplit(trace='3*6=18', response='The answer is 18.', has_think=True)
    >>> split_think("no tags").has_think
    False
    """
    head, tag, tail = completion.rpartition(_THINK_CLOSE)
    if not tag:
        return ThinkSplit(trace=completion, response=completion, has_think=False)
    trace = head.strip().removeprefix("<think>").strip()
    return ThinkSplit(trace=trace, response=tail.strip(), has_think=True)


def _last_boxed(text: str) -> str | None:
    for match in reversed(list(_BOXED.finditer(text))):
        if not match.group(1):
            bare = re.match(r"\s*([^\s$]+)", text[match.end():])
            if bare:
                return bare.group(1)
            continue
        depth, start = 1, match.end()
        for index in range(start, len(text)):
            depth += {"{": 1, "}": -1}.get(text[index], 0)
            if depth == 0:
                return text[start:index].strip()
    return None


def _last_phrase(text: str) -> str | None:
    for match in reversed(list(_PHRASE.finditer(text))):
        rest = text[match.end(): match.end() + 400].lstrip(" \t\n:：")
        cut = _SENTENCE_END.search(rest)
        answer = _trim_emphasis((rest[: cut.start()] if cut else rest).strip(" \t:："))
        if answer:
            return answer
    return None


def _trim_emphasis(answer: str) -> str:
    """Drop a markdown run left unmatched by the cut (``**Answer:** 18``), keep ``**18**``."""
    lead = len(answer) - len(answer.lstrip("*_"))
    if lead and answer[:lead] not in answer[lead:]:
        answer = answer[lead:].strip()
    trail = len(answer) - len(answer.rstrip("*_"))
    if trail and answer[-trail:] not in answer[:-trail]:
        answer = answer[:-trail].strip()
    return answer


def extract_answer(text: str, lang: str | None = None, *, fallback: bool = True) -> str | None:
    """Final answer of a completion: last boxed, else last answer phrase, else last number.

    ``lang`` is accepted for symmetry with the verifiers; phrases of every language are tried.
    ``fallback=False`` keeps only boxed answers and phrases (no last number, no short response).

    >>> extract_answer("<think>...</think>So \\\\boxed{\\\\frac{1}{2}}.")
    '\\\\frac{1}{2}'
    >>> extract_answer("計算すると、答えは１８個です。", "ja"), extract_answer("合計は3万円になる", "ja")
    ('１８個', '3万')
    >>> extract_answer("Ответ: 42", "ru"), extract_answer("no number", "en", fallback=False)
    ('42', None)
    """
    return _extract(split_think(text).response, fallback)[0]


def _extract(response: str, fallback: bool = True) -> tuple[str | None, bool]:
    """(answer, located): located is False for the last-number fallback or no answer."""
    answer = _last_boxed(response) or _last_phrase(response)
    if answer is not None or not fallback:
        return answer, answer is not None
    span = last_number_span(response)
    if span:
        return response[span[0]: span[1]], False
    bare = response.strip()
    return (bare, True) if 0 < len(bare) <= SHORT_RESPONSE_CHARS and "\n" not in bare else (None, False)


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
    correct: bool
    extracted: str | None
    normalized: str | None
    gold_normalized: str | None
    verifier: str


class Verifier(Protocol):
    name: str

    def __call__(self, text: str, gold: str, lang: str, *, extract: bool = True) -> Verdict: ...


def _math_verify_input(text: str) -> str:
    text = text[-MATH_VERIFY_MAX_CHARS:]
    if any(d in text for d in ("$", "\\(", "\\[")):
        return text
    latex_like = any(c in text for c in "\\^_{}") or re.match(r"^\s*[(\[].*,.*[)\]]\s*$", text)
    return f"${text}$" if latex_like else text


@lru_cache(maxsize=8192)
def _mv_parse(text: str, on_main_thread: bool) -> tuple:
    from math_verify import parse

    timeout = 5 if on_main_thread else None
    return tuple(parse(_math_verify_input(text), parsing_timeout=timeout))


def _math_verify(answer: str | None, gold: str) -> tuple[bool, str | None, str | None]:
    """(equal, answer form, gold form) by math-verify; thread-safe (no alarm off the main thread)."""
    from math_verify import verify as mv_verify

    main = threading.current_thread() is threading.main_thread()
    gold_parsed = _mv_parse(gold, main)
    parsed = _mv_parse(answer, main) if answer else ()
    forms = [str(p[-1]) if p else None for p in (parsed, gold_parsed)]
    if not parsed or not gold_parsed:
        return False, forms[0], forms[1]
    equal = mv_verify(list(gold_parsed), list(parsed), timeout_seconds=5 if main else None)
    return equal, forms[0], forms[1]


class _Base:
    name = ""

    def __call__(self, text: str, gold: str, lang: str, *, extract: bool = True) -> Verdict:
        response = split_think(text).response if extract else None
        answer, located = _extract(response) if extract else (text, True)
        # math-verify reads the whole response when no boxed answer or phrase located one
        latex_source = answer if located else response
        correct, normalized, gold_normalized = self.judge(answer, latex_source, gold, lang)
        return Verdict(bool(correct), answer, normalized, gold_normalized, self.name)

    def judge(self, answer, latex_source, gold, lang):  # pragma: no cover - interface
        raise NotImplementedError


class ExactVerifier(_Base):
    """String equality of the stripped answer and gold (the paper's exact-match proxy)."""

    name = "exact"

    def judge(self, answer, latex_source, gold, lang):
        normalized = answer.strip() if answer is not None else None
        return normalized == gold.strip(), normalized, gold.strip()


class NumericVerifier(_Base):
    """Equality of language-aware normalized numbers (:func:`components.numbers.parse_number`)."""

    name = "numeric"

    def judge(self, answer, latex_source, gold, lang):
        value, gold_value = parse_number(answer, lang), parse_number(gold, None)
        correct = value is not None and value == gold_value
        return correct, normalize_number(answer, lang), normalize_number(gold, None)


class MathVerifyVerifier(_Base):
    """math-verify's parse/verify on the answer (its own extraction on the response if none)."""

    name = "math_verify"

    def judge(self, answer, latex_source, gold, lang):
        return _math_verify(latex_source, gold)


class TrustedVerifier(_Base):
    """Reference: numbers decided by normalization, letters A-J compared, the rest by math-verify."""

    name = "trusted"

    def judge(self, answer, latex_source, gold, lang):
        value, gold_value = parse_number(answer, lang), parse_number(gold, None)
        if value is not None and gold_value is not None:
            return value == gold_value, normalize_number(answer, lang), normalize_number(gold, None)
        gold_letter = choice_letter(gold) if len(gold.strip(" ()$*.")) == 1 else None
        if gold_letter:
            letter = choice_letter(answer) or choice_letter(_last_phrase(answer or ""))
            return letter == gold_letter, letter, gold_letter
        return _math_verify(latex_source and ascii_fold(latex_source), gold)


class HybridVerifier(_Base):
    """Numeric equality first; math-verify when numeric normalization does not accept."""

    name = "hybrid"

    def judge(self, answer, latex_source, gold, lang):
        numeric = _NUMERIC.judge(answer, latex_source, gold, lang)
        return numeric if numeric[0] else _MATH_VERIFY.judge(answer, latex_source, gold, lang)


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


def verify(name: str, text: str, gold: str, lang: str, *, extract: bool = True) -> Verdict:
    """Judge ``text`` (a completion, or the answer itself with ``extract=False``) against ``gold``.

    >>> verify("trusted", "<think>…</think>\\\\boxed{3万}", "30000", "ja").correct
    True
    >>> verify("exact", "３万", "30000", "ja", extract=False).correct
    False
    """
    return get_verifier(name)(text, gold, lang, extract=extract)
