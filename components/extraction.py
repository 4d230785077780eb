r"""Where the final answer of a completion is, and how it was found.

Two modes, chosen per call (``mode=``):

``"strict"``
    the last ``\boxed{…}`` (or ``\fbox{…}``) of the response after the last ``</think>``, and
    nothing else: a completion whose think block is never closed has no answer. This is the
    answer format that paper protocols prescribe ("put your final answer within \boxed{}").

``"lenient"`` (the default)
    1. the response is the text after the last ``</think>`` (the whole text when none);
    2. the last ``\boxed{…}`` and the last localized final-answer phrase of any language in
       :data:`ANSWER_PHRASES` (models often answer in another language than asked), cut at the
       end of its sentence: the later of the two wins. A boxed answer inside the phrase's
       sentence ("The final answer is $\boxed{18}$.") is the answer; a phrase after the last
       box wins only when it holds a digit, a CJK numeral or LaTeX, so commentary such as
       "\boxed{18}. The answer is reasonable." keeps 18; the sentence never ends inside
       closed math (``$16,\!386.20$``, ``\[ 18 \]`` over lines);
    3. else the last number or LaTeX math expression of the response (lm-eval's MGSM
       "flexible-extract", made LaTeX-aware): numbers inside math or glued to a word
       (``AZYUK2A``, ``x2``, ``3rd``, a power ``2²``; a unit such as ``18km`` or ``3m²`` is
       fine) are skipped, and a math span holding a digit (``$\frac{36}{2}$``, an
       undelimited ``\frac{10}{9}``, with its sign: ``-\frac{10}{9}``) is itself a
       candidate, so ``\frac{10}{9}`` never yields 9; a slash fraction is one number
       (``is 2/3`` yields ``2/3``, not 3); the original characters are kept (``１８``, ``๒/๓``);
    4. else a short one-line response (≤ :data:`SHORT_RESPONSE_CHARS` characters) is the
       answer itself (``十八``, ``C``).

:class:`Extraction` records ``method`` (``boxed``, ``phrase``, ``last_number``,
``short_response`` or ``none``), so evaluation can count the answers that only a fallback
found. Hand-written: math-verify's own extraction has no localized phrases and no strict
think-block rule, and lm-eval's regexes read digits inside LaTeX.

Inline math broken over lines (``$ \n 9 \n $``, ``\( \n 9 \n \)``) is read, where
Math-Verify's own tests expect nothing: TeX reads a line break inside math as a space, so
such an answer says 9, and a verdict should not depend on where a model breaks its lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from components.numbers import NUMBER_PATTERN, ascii_fold, glued_to_word

__all__ = ["ANSWER_PHRASES", "MODES", "Extraction", "ThinkSplit", "extract", "extract_answer",
           "last_number_span", "latex_spans", "split_think"]

Mode = Literal["strict", "lenient"]
MODES: tuple[str, ...] = ("strict", "lenient")
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
_ANSWER_LIKE = re.compile(r"[\d\\$〇零一二三四五六七八九十百千万萬億亿两兩]")
_THINK_CLOSE = "</think>"
# Delimited math, pandoc's rule for $..$ (no space inside the delimiters, no digit after the
# closing one; an escaped \$ is currency, so "$5 and $6" is not math); display forms first.
# A display or \( span left open runs to the end of the text.
_INLINE_DOLLARS = r"(?<!\\)\$(?=[^\s$])(?:[^$\n\\]|\\.)*?(?<=[^\s\\])\$(?!\d)"
_DELIMITED_MATH = re.compile(
    r"\$\$.*?(?:\$\$|\Z)|\\\[.*?(?:\\\]|\Z)|\\\(.*?(?:\\\)|\Z)|" + _INLINE_DOLLARS, re.S)
_CLOSED_MATH = re.compile(r"\$\$.*?\$\$|\\\[.*?\\\]|\\\(.*?\\\)|" + _INLINE_DOLLARS, re.S)
# A sign belongs to what follows it unless an operand ends just before it (``x-1`` is a difference).
_SIGN_BEFORE = re.compile(r"(?<![0-9A-Za-z)}\]])[-+]$")
# The numerator of a slash fraction ending where a number starts: ``2/3``, ``-1 / 4``.
_NUMERATOR_BEFORE = re.compile(r"(?<![\w.,/')}\]])[-+]?\d+\s*/\s*$")
_COMMAND = re.compile(r"\\[A-Za-z]+")
_BRACKET_LIST = re.compile(r"[(\[][-+\d\s.]*[,;][-+\d\s.,;]*[)\]]")  # (0,9), [1; 2), (-1, 0, 1)


@dataclass(frozen=True)
class ThinkSplit:
    trace: str
    response: str
    has_think: bool


@dataclass(frozen=True)
class Extraction:
    """The answer (None: none found), how it was found, and the response it was found in."""

    answer: str | None
    method: str
    response: str


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


def _last_boxed(text: str) -> tuple[int, int, str] | None:
    """(start, end, content) of the last ``\\boxed{…}``/``\\fbox{…}`` (nested braces; ``\\boxed 7``)."""
    for match in reversed(list(_BOXED.finditer(text))):
        if not match.group(1):
            bare = re.match(r"\s*([^\s$]+)", text[match.end():])
            if bare:
                return match.start(), match.end() + bare.end(), bare.group(1)
            continue
        depth, start = 1, match.end()
        for index in range(start, len(text)):
            depth += {"{": 1, "}": -1}.get(text[index], 0)
            if depth == 0:
                return match.start(), index + 1, text[start:index].strip()
    return None


def _sentence_end(text: str) -> int:
    r"""Where the sentence that starts ``text`` ends: never inside closed math (``$16,\!386.20$``,
    ``\[ 18 \]`` over lines) nor at the ``!`` of LaTeX's negative thin space ``\!``."""
    math = [m.span() for m in _CLOSED_MATH.finditer(text)] if ("$" in text or "\\" in text) else []
    for cut in _SENTENCE_END.finditer(text):
        inside = any(a < cut.start() < b - 1 for a, b in math)
        if not inside and not (cut.group() == "!" and text[cut.start() - 1: cut.start()] == "\\"):
            return cut.start()
    return len(text)


def _last_phrase(text: str) -> tuple[int, int, str] | None:
    """(start, end, answer) of the sentence after the last final-answer phrase that holds one."""
    for match in reversed(list(_PHRASE.finditer(text))):
        window = text[match.end(): match.end() + 400]
        rest = window.lstrip(" \t\n:：")
        cut = _sentence_end(rest)
        answer = _trim_emphasis(rest[:cut].strip(" \t:："))
        if answer:
            start = match.end() + len(window) - len(rest)
            return start, start + cut, answer
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


def _brace_end(text: str, index: int) -> int:
    """Index after the brace group opening at ``text[index]`` (end of text if unclosed)."""
    depth = 0
    for position in range(index, len(text)):
        depth += {"{": 1, "}": -1}.get(text[position], 0)
        if depth == 0:
            return position + 1
    return len(text)


def _command_end(text: str, end: int) -> int:
    """Extend a bare LaTeX command over its brace groups, glued digits and scripts."""
    while end < len(text):
        if text[end] == "{":
            end = _brace_end(text, end)
        elif text[end] in "^_" and end + 1 < len(text):
            end = _brace_end(text, end + 1) if text[end + 1] == "{" else end + 2
        elif text[end].isdigit():
            end += 1
        else:
            return end
    return end


def latex_spans(text: str) -> list[tuple[int, int]]:
    r"""Offsets of LaTeX math in ``text``: delimited math, then undelimited commands outside it.

    A number glued before a command (``2\sqrt{3}``) belongs to the command's span.

    >>> text = r"So $x = 2$ and \frac{10}{9} cost \$5 or $6."
    >>> [text[a:b] for a, b in latex_spans(text)]
    ['$x = 2$', '\\frac{10}{9}']
    """
    spans = [m.span() for m in _DELIMITED_MATH.finditer(text)]
    for match in _COMMAND.finditer(text):
        if any(a <= match.start() < b for a, b in spans):
            continue
        start = match.start()
        while start and (text[start - 1].isdigit() or text[start - 1] in ".,"):
            start -= 1
        if _SIGN_BEFORE.search(text[max(0, start - 2): start]):
            start -= 1
        spans.append((start, _command_end(text, match.end())))
    return sorted(spans)


def last_number_span(text: str) -> tuple[int, int] | None:
    r"""Offsets of the last number (sign, separators, CJK magnitude, percent) outside math and words.

    >>> text = "3 boxes of 1,000 yen: 合計3万円"
    >>> start, end = last_number_span(text); text[start:end]
    '3万'
    >>> last_number_span("AZYUK2A"), last_number_span(r"$\frac{36}{2}$")
    (None, None)
    """
    folded = ascii_fold(text)
    math = latex_spans(folded) if ("$" in folded or "\\" in folded) else []
    for match in reversed(list(NUMBER_PATTERN.finditer(folded))):
        start, end = match.span()
        while end > start and folded[end - 1] in ".,' ":
            end -= 1
        if any(a <= start < b for a, b in math) or glued_to_word(folded, start, end):
            continue
        numerator = _NUMERATOR_BEFORE.search(folded[max(0, start - 40): start])
        if numerator and folded[start:end].isdigit():
            start -= len(numerator.group())
        return start, end
    return None


def _last_number_or_math(response: str) -> str | None:
    """The later of the last number outside math and the last math span holding a digit.

    A number inside brackets that hold a comma or semicolon brings the brackets along
    (``(0,9)``), so the verifier can tell a pair or an interval from one number.
    """
    number = last_number_span(response)
    folded = ascii_fold(response)
    if number:
        for match in _BRACKET_LIST.finditer(folded):
            if match.start() < number[0] and number[1] < match.end():
                number = match.span()
    math = [span for span in latex_spans(folded) if re.search(r"\d", folded[span[0]: span[1]])]
    candidates = [span for span in (number, math[-1] if math else None) if span]
    if not candidates:
        return None
    start, end = max(candidates, key=lambda span: span[1])
    return response[start:end]


def _boxed_or_phrase(response: str) -> tuple[str | None, str]:
    """The later of the last box and the last phrase; only a phrase after the box can beat it."""
    boxed = _last_boxed(response)
    phrase = _last_phrase(response[boxed[1]:] if boxed else response)
    if phrase and (not boxed or _ANSWER_LIKE.search(phrase[2])):
        return phrase[2], "phrase"
    return (boxed[2], "boxed") if boxed else (None, "none")


def extract(text: str, *, mode: Mode = "lenient", fallback: bool = True) -> Extraction:
    r"""Find the final answer of a completion (see the module docstring for both modes).

    ``fallback=False`` (lenient only) keeps boxed answers and phrases: no last number, no
    short response.

    >>> extract(r"<think>…</think>So \boxed{255}. The final answer is $10,455$.")
    Extraction(answer='$10,455$', method='phrase', response='So \\boxed{255}. The final answer is $10,455$.')
    >>> extract(r"\boxed{18}", mode="strict").method, extract(r"x = \frac{10}{9}").answer
    ('none', '\\frac{10}{9}')
    """
    if mode not in MODES:
        raise ValueError(f"unknown extraction mode {mode!r}; known: {', '.join(MODES)}")
    split = split_think(text)
    response = split.response
    if mode == "strict":
        boxed = _last_boxed(response) if split.has_think else None
        return Extraction(boxed[2] if boxed else None, "boxed" if boxed else "none", response)
    answer, method = _boxed_or_phrase(response)
    if answer is not None or not fallback:
        return Extraction(answer, method, response)
    answer = _last_number_or_math(response)
    if answer is not None:
        return Extraction(answer, "last_number", response)
    bare = response.strip()
    if 0 < len(bare) <= SHORT_RESPONSE_CHARS and "\n" not in bare:
        return Extraction(bare, "short_response", response)
    return Extraction(None, "none", response)


def extract_answer(text: str, lang: str | None = None, *, fallback: bool = True,
                   mode: Mode = "lenient") -> str | None:
    """Final answer of a completion (:func:`extract`'s answer).

    ``lang`` is accepted for symmetry with the verifiers; phrases of every language are tried.

    >>> extract_answer("<think>...</think>So \\\\boxed{\\\\frac{1}{2}}.")
    '\\\\frac{1}{2}'
    >>> extract_answer("計算すると、答えは１８個です。", "ja"), extract_answer("合計は3万円になる", "ja")
    ('１８個', '3万')
    >>> extract_answer("Ответ: 42", "ru"), extract_answer("no number", "en", fallback=False)
    ('42', None)
    """
    return extract(text, mode=mode, fallback=fallback).answer
