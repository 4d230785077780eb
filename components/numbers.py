"""Language-aware normalization of numeric final answers.

Implements the "trusted" normalization of the multilingual verifier-bias paper
(arXiv 2608.20362, section 3: "Arabic-numeral canonicalization, kanji magnitude
expansion, percent and symbol handling") so that surface variants a model really
writes compare equal to the gold number:

* any Unicode decimal digits (full-width ``１８``, Thai, Bengali, Telugu, Arabic-Indic…)
  become ASCII; full-width ASCII punctuation (``％``, ``（）``, ``．``) too;
* separators: spaces, no-break and narrow no-break spaces and apostrophes group thousands;
  when both ``.`` and ``,`` occur the right-most one is the decimal mark; a single ``,``
  or ``.`` followed by exactly three digits is decided by the language
  (:data:`DECIMAL_COMMA_LANGUAGES` read ``1,234`` as 1.234 and ``1.234`` as 1234) unless
  ``grouping=True``: verifiers pass it when the gold is an integer, and then that lone
  separator groups thousands in every language (models write ``1,000`` English-style in
  French too; an answer meaning the decimal 1.234 for the integer gold 1234 is the
  accepted cost). A comma followed by one, two or four and more digits is a decimal mark
  everywhere (``3,5``);
* pairs, intervals and lists are not one number: brackets holding a ``,`` or ``;``
  (``(0,9)``, ``[0,9)``, ``(1; 2)``) give None unless what they hold is one grouped number
  (``(1,234)``);
* CJK/Korean magnitudes glued to digits are expanded (``3万`` = 30000, ``1.5万`` = 15000,
  ``2億5000万``, ``5천``); a pure kanji numeral (``十八``, ``三万``) is read too;
* wrappers are dropped: markdown ``**``/``__``, ``$``/``\\(``, ``\\boxed{}``/``\\text{}``,
  brackets and quotes, sentence punctuation, a leading ``x =``; the percent sign is
  dropped (``18%`` ≡ 18, as in MGSM where "what percent" has gold 18);
* currency symbols, counters and units (``$ € ¥ ₹ ฿``, ``元 円 个 個 人 本 匹 บาท ドル``,
  "dollars", "euros" …) are ignored: an answer is numeric when it holds exactly one number
  and the rest is words, currency or punctuation (no digits, no math operators, no Latin
  letters glued to the number other than a unit such as ``km`` or ``m``, whose power
  ``m²``/``cm^3`` is part of the unit; ``2²`` is a power, not 2);
* two LaTeX wrappers side by side (``\\boxed{1}\\boxed{2}``) are two answers, never the number 12.

Gold answers are dataset strings; MGSM/MSVAMP/MMATH write them English-style in every
language (``2,125`` in ``mgsm_de.tsv`` too), so verifiers read golds with ``lang=None``
(decimal point). Values are exact :class:`fractions.Fraction`; ``1/2`` equals ``0.5``;
:func:`same_value` compares two integers exactly and anything else after rounding both to
:data:`DECIMAL_PLACES` places (math-verify's default ``float_rounding``), so
``0.0833333333333333`` equals ``1/12`` and ``0.08333`` does not.
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal, localcontext
from fractions import Fraction
from functools import lru_cache

__all__ = ["DECIMAL_COMMA_LANGUAGES", "DECIMAL_PLACES", "NUMBER_PATTERN", "parse_number", "normalize_number",
           "format_number", "same_value", "glued_to_word", "ascii_fold"]

DECIMAL_COMMA_LANGUAGES = frozenset(
    "fr de es pt ru it nl pl tr id vi uk cs sk sl hr sr bs bg ro hu da sv no nb nn fi el "
    "et lv lt az kk be ca eu gl is mk sq ka hy uz mn".split()
)
MAX_ANSWER_CHARS = 500
DECIMAL_PLACES = 6  # non-integers agree when equal after rounding to this many places

# One char -> one char, so spans found in the folded text are spans of the original.
_FOLD = {c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)}  # full-width ASCII
_FOLD.update({0xFFE5: "¥", 0xFFE1: "£", 0xFFE0: "¢", 0x3000: " ", 0x066A: "%", 0x066B: ".",
              0x066C: "'", 0x2019: "'", 0x2212: "-", 0x2012: "-", 0x2013: "-", 0xFE63: "-"})
_FOLD.update({c: " " for c in (0x00A0, 0x202F, 0x2009, 0x2007, 0x200A, 0x2008)})
for _zero in (0x0660, 0x06F0, 0x07C0, 0x0966, 0x09E6, 0x0A66, 0x0AE6, 0x0B66, 0x0BE6, 0x0C66,
              0x0CE6, 0x0D66, 0x0DE6, 0x0E50, 0x0ED0, 0x0F20, 0x1040, 0x17E0, 0x1810, 0xFF10):
    _FOLD.update({_zero + i: str(i) for i in range(10)})

_SMALL = {"十": 10, "百": 100, "千": 1000, "백": 100, "천": 1000}
_BIG = {"万": 10**4, "萬": 10**4, "만": 10**4, "億": 10**8, "亿": 10**8, "억": 10**8,
        "兆": 10**12, "조": 10**12}
_GLUED_MAG = "百千万萬億亿兆백천만억조"  # magnitudes that may follow Arabic digits (not 十)
_KANJI_DIGITS = {"〇": "0", "零": "0", "一": "1", "二": "2", "两": "2", "兩": "2", "三": "3",
                 "四": "4", "五": "5", "六": "6", "七": "7", "八": "8", "九": "9"}
NUMBER_PATTERN = re.compile(
    r"(?P<sign>(?<![0-9A-Za-z)])[-+])?"
    r"(?P<body>(?:(?<![A-Za-z0-9])\.(?=\d))?\d(?:[.,'\d]|\ (?=\d{3}(?!\d)))*)"
    rf"(?P<mag>[{_GLUED_MAG}](?:[{_GLUED_MAG}]|\d+(?:\.\d+)?)*)?"
    r"(?P<pct>\s?%)?"
)
_KANJI_NUMBER = re.compile(
    r"(?P<sign>-)?(?P<num>[〇零一二三四五六七八九两兩十百千万萬億亿兆\d.]+)"
    r"[个個人本匹元円块塊枚台頭头冊册杯件只条張张名歳岁分秒点時間日年月週周回次倍]{0,2}"
)
_FRACTION = re.compile(r"(-?)\s*(?:\\frac\{(-?\d+)\}\{(\d+)\}|\\frac(\d)(\d)|(-?\d+)\s*/\s*(\d+))")
_WRAPPERS = r"\\(?:text\w*|math\w*|boxed|fbox|mbox|operatorname)\s*\{"
_LATEX_WRAP = re.compile(_WRAPPERS + r"([^{}]*)\}")
_ADJACENT_WRAPS = re.compile(r"\}(?=" + _WRAPPERS + ")")  # \boxed{1}\boxed{2} is two answers, not 12
_LATEX_SUBS = (("\\!", ""), ("\\,", " "), ("\\;", " "), ("\\:", " "), ("\\ ", " "), ("~", " "),
               ("{,}", ","), ("\\%", "%"), ("\\$", "$"), ("\\dfrac", "\\frac"),
               ("\\tfrac", "\\frac"), ("\\left", ""), ("\\right", ""), ("**", ""), ("__", ""),
               ("`", ""), ("^\\circ", "°"), ("^{\\circ}", "°"))
_PAIRS = {"(": ")", "[": "]", "「": "」", "『": "』", "【": "】", "〔": "〕", '"': '"', "“": "”",
          "«": "»", "‘": "'", "'": "'", "$": "$", "*": "*", "_": "_"}
_EDGE_PUNCT = ".。!！?？:：;；,，、।॥؟، \t\n"
_LEAD_PUNCT = _EDGE_PUNCT.replace(".", "")
_ASSIGNMENT = re.compile(r"^[^\W\d]\w{0,20}\s*=\s*(?=[^=]*$)")
_FORBIDDEN = set("=+*/^_\\{}<>|~×÷±√∑∏∫·#&@π∞")
_UNITS = frozenset("km m cm mm kg g mg l ml min mins hr hrs h mph kmh usd eur yen".split())
_SUPERSCRIPT_DIGITS = frozenset("⁰¹²³⁴⁵⁶⁷⁸⁹")
_UNIT_POWER = re.compile(r"(?<=[A-Za-z])(?:[²³]|\^\{?[23]\}?)")  # m², cm^3: a unit, not a power of the number
_BRACKETED = re.compile(r"([(\[{])([^()\[\]{}]*[,;][^()\[\]{}]*)([)\]}])")
_CLOSING = {"(": ")", "[": "]", "{": "}"}
_GROUPED_ONLY = re.compile(r"\s*[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?\s*")


def ascii_fold(text: str) -> str:
    """Map full-width ASCII, native decimal digits and special spaces/minus signs to ASCII.

    The mapping is one character to one character, so offsets are preserved.

    >>> ascii_fold("１８，５")
    '18,5'
    >>> ascii_fold("๑๒ บาท")
    '12 บาท'
    """
    return text.translate(_FOLD)


def _latex_subs(text: str) -> str:
    for old, new in _LATEX_SUBS:
        if old in text:
            text = text.replace(old, new)
    return text


def _strip_wrappers(text: str) -> str:
    text = _ADJACENT_WRAPS.sub("} ", text)
    for _ in range(4):
        unwrapped = _LATEX_WRAP.sub(r"\1", text)
        if unwrapped == text:
            break
        text = unwrapped
    for _ in range(8):
        before = text
        text = text.lstrip(_LEAD_PUNCT).rstrip(_EDGE_PUNCT)
        if text[:2] in ("\\(", "\\[") and text[-2:] in ("\\)", "\\]"):
            text = text[2:-2]
        elif len(text) >= 2 and _PAIRS.get(text[0]) == text[-1]:
            text = text[1:-1]
        text = _ASSIGNMENT.sub("", text.lstrip(_LEAD_PUNCT).rstrip(_EDGE_PUNCT))
        if text == before:
            break
    return text


def _digits_value(body: str, lang: str | None, grouping: bool = False) -> Fraction | None:
    """Value of digits with separators (thousands vs decimal mark decided as documented)."""
    groups_sep = "'" in body or " " in body
    body = body.replace("'", "").replace(" ", "")
    commas, dots = body.count(","), body.count(".")
    if commas and dots:
        dec = "," if body.rfind(",") > body.rfind(".") else "."
        thousands = "." if dec == "," else ","
        if body.count(dec) > 1 or body.find(thousands) > body.find(dec):
            return None
        return _plain(body.replace(thousands, ""), dec)
    sep = "," if commas else "." if dots else ""
    if not sep:
        return Fraction(int(body))
    if groups_sep:  # "1 234,5" / "1'234.5": spaces group, the other mark is decimal
        return _plain(body, sep) if commas + dots == 1 else None
    head, _, tail = body.partition(sep)
    if body.count(sep) > 1:
        parts = body.split(sep)
        if not parts[0] or any(len(p) not in (2, 3) for p in parts[1:]) or len(parts[-1]) != 3:
            return None
        return Fraction(int("".join(parts)))
    ambiguous = len(tail) == 3 and 0 < len(head) <= 3 and head != "0"
    if not ambiguous:
        return _plain(body, sep)
    if grouping:
        return Fraction(int(head + tail))
    decimal_comma = lang in DECIMAL_COMMA_LANGUAGES
    is_decimal = (sep == ",") == decimal_comma
    return _plain(body, sep) if is_decimal else Fraction(int(head + tail))


def _plain(body: str, dec: str) -> Fraction | None:
    head, _, tail = body.partition(dec)
    if not tail.isdigit() or (head and not head.isdigit()):
        return None
    return Fraction(int(head or "0") * 10 ** len(tail) + int(tail), 10 ** len(tail))


def _magnitudes(first: Fraction | None, mag: str) -> Fraction:
    """Expand a chain such as ``万`` / ``億5000万`` / ``千5百万`` after a leading value."""
    total, section, current = Fraction(0), Fraction(0), first
    for token in re.findall(r"\d+(?:\.\d+)?|\D", mag):
        if token in _SMALL:
            section += (current if current is not None else 1) * _SMALL[token]
            current = None
        elif token in _BIG:
            block = section + (current or 0)
            total += (block or 1) * _BIG[token]
            section, current = Fraction(0), None
        else:
            current = Fraction(token)
    return total + section + (current or 0)


def _token_value(match: re.Match, lang: str | None, grouping: bool) -> Fraction | None:
    body = match.group("body").rstrip(".,' ")
    value = _digits_value(body, lang, grouping) if body else None
    if value is None:
        return None
    if match.group("mag"):
        value = _magnitudes(value, match.group("mag"))
    return -value if match.group("sign") == "-" else value


def _benign(rest: str) -> bool:
    for char in rest:
        if char in _FORBIDDEN:
            return False
        category = unicodedata.category(char)
        if category[0] == "N" or category in ("Sm", "Sk"):
            return False
    return True


def _is_variable_letter(char: str) -> bool:
    return char.isalpha() and (char.isascii() or "\u0370" <= char <= "\u03ff")


def glued_to_word(text: str, start: int, end: int) -> bool:
    """A Latin/Greek/Cyrillic letter touching the number (``2x``, ``x2``, ``2π``) unless a unit (``18km``,
    ``3m²``), or a superscript power after it (``2²``)."""
    before = text[start - 1] if start else ""
    if before.isdigit() or _is_variable_letter(before) or "\u0400" <= before <= "\u04ff":
        return True
    if text[end: end + 1] in _SUPERSCRIPT_DIGITS:  # 2² is a power, not the number 2
        return True
    word = re.match(r"[A-Za-z\u0370-\u03ff]+", text[end:])
    return bool(word) and word.group().lower() not in _UNITS


def _kanji_value(text: str) -> Fraction | None:
    match = _KANJI_NUMBER.fullmatch(text)
    if not match or not any(c in _KANJI_DIGITS or c in _SMALL or c in _BIG for c in text):
        return None
    num = "".join(_KANJI_DIGITS.get(c, c) for c in match.group("num"))
    if num.replace(".", "").isdigit():
        value = _plain(num, ".") if "." in num else Fraction(int(num))
    elif num[0].isdigit() or num[0] in _SMALL or num[0] in _BIG:
        lead = re.match(r"\d+(?:\.\d+)?", num)
        value = _magnitudes(Fraction(lead.group()) if lead else None, num[lead.end() if lead else 0:])
    else:
        return None
    return -value if value is not None and match.group("sign") else value


def _is_tuple(text: str, lang: str | None) -> bool:
    """Brackets holding ``;`` or a list comma: a pair, an interval or a list, not one number.

    A comma inside brackets separates items unless the brackets hold one grouped number
    (``(1,234)``) or, in a decimal-comma language, one decimal (``(3,5)`` in French, where
    pairs are written ``(3 ; 5)``).
    """
    for match in _BRACKETED.finditer(text):
        opening, content, closing = match.groups()
        if _CLOSING[opening] != closing or ";" in content or content.count(",") > 1 and not _GROUPED_ONLY.fullmatch(content):
            return True
        decimal = lang in DECIMAL_COMMA_LANGUAGES and re.search(r"\d,\d", content)
        if not (decimal or _GROUPED_ONLY.fullmatch(content)):
            return True
    return False


@lru_cache(maxsize=65536)
def parse_number(text: str | None, lang: str | None = None, *, grouping: bool = False) -> Fraction | None:
    """Exact value of a numeric answer, or None when ``text`` is not one number.

    ``grouping``: a lone ``,``/``.`` before exactly three digits groups thousands whatever
    ``lang`` says (verifiers set it when the gold is an integer).

    >>> parse_number("**１８**", "ja"), parse_number("3万円", "ja"), parse_number("1.5万", "zh")
    (Fraction(18, 1), Fraction(30000, 1), Fraction(15000, 1))
    >>> parse_number("1.234,5", "de"), parse_number("1 234,5 €", "fr"), parse_number("1,234", "en")
    (Fraction(2469, 2), Fraction(2469, 2), Fraction(1234, 1))
    >>> parse_number("1,234", "de"), parse_number("答えは18です", "ja"), parse_number("x = 2y", "en")
    (Fraction(617, 500), Fraction(18, 1), None)
    >>> parse_number("1,000", "fr", grouping=True), parse_number("(0,9)", "en"), parse_number("[0,9)", "fr")
    (Fraction(1000, 1), None, None)
    """
    if not text or len(text) > MAX_ANSWER_CHARS:
        return None
    if text.isascii() and text.isdigit():
        return Fraction(int(text))
    folded = _latex_subs(ascii_fold(text))
    if ("," in folded or ";" in folded) and _is_tuple(folded, lang):
        return None
    core = _UNIT_POWER.sub("", _strip_wrappers(folded))
    fraction = _FRACTION.fullmatch(core)
    if fraction:
        sign, *parts = fraction.groups()
        num, den = [p for p in parts if p is not None]
        value = Fraction(int(num), int(den)) if int(den) else None
        return -value if value is not None and sign else value
    matches = list(NUMBER_PATTERN.finditer(core))
    if len(matches) != 1:
        return _kanji_value(core) if not matches else None
    match = matches[0]
    rest = core[: match.start()] + " " + core[match.end():]
    if not _benign(rest) or glued_to_word(core, match.start(), match.end()):
        return None
    return _token_value(match, lang, grouping)


def format_number(value: Fraction) -> str:
    """Canonical text of a value: integer, exact decimal, or ``p/q``.

    >>> format_number(Fraction(30000)), format_number(Fraction(2469, 2)), format_number(Fraction(1, 3))
    ('30000', '1234.5', '1/3')
    """
    if value.denominator == 1:
        return str(value.numerator)
    den = value.denominator
    while den % 2 == 0:
        den //= 2
    while den % 5 == 0:
        den //= 5
    if den != 1:
        return f"{value.numerator}/{value.denominator}"
    with localcontext() as context:
        context.prec = 200
        return format(Decimal(value.numerator) / Decimal(value.denominator), "f")


def same_value(value: Fraction, other: Fraction) -> bool:
    """Integers compare exactly; otherwise equal after rounding both to :data:`DECIMAL_PLACES` places.

    >>> same_value(Fraction(1, 12), Fraction("0.0833333333333333")), same_value(Fraction(1, 12), Fraction("0.08333"))
    (True, False)
    """
    if value == other:
        return True
    if value.denominator == 1 and other.denominator == 1:
        return False
    return round(value, DECIMAL_PLACES) == round(other, DECIMAL_PLACES)


def normalize_number(text: str | None, lang: str | None = None, *, grouping: bool = False) -> str | None:
    """Language-aware canonical form of a numeric answer, or None if it is not one number.

    >>> normalize_number("１８", "ja"), normalize_number("€18", "fr"), normalize_number("18 บาท", "th")
    ('18', '18', '18')
    >>> normalize_number("(−3,5 %)", "fr"), normalize_number("\\\\frac{1}{2}", "en")
    ('-3.5', '0.5')
    """
    value = parse_number(text, lang, grouping=grouping)
    return None if value is None else format_number(value)
