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
  (:data:`DECIMAL_COMMA_LANGUAGES` read ``1,234`` as 1.234 and ``1.234`` as 1234);
* CJK/Korean magnitudes glued to digits are expanded (``3万`` = 30000, ``1.5万`` = 15000,
  ``2億5000万``, ``5천``); a pure kanji numeral (``十八``, ``三万``) is read too;
* wrappers are dropped: markdown ``**``/``__``, ``$``/``\\(``, ``\\boxed{}``/``\\text{}``,
  brackets and quotes, sentence punctuation, a leading ``x =``; the percent sign is
  dropped (``18%`` ≡ 18, as in MGSM where "what percent" has gold 18);
* currency symbols, counters and units (``$ € ¥ ₹ ฿``, ``元 円 个 個 人 本 匹 บาท ドル``,
  "dollars", "euros" …) are ignored: an answer is numeric when it holds exactly one number
  and the rest is words, currency or punctuation (no digits, no math operators, no Latin
  letters glued to the number other than a unit such as ``km``).

Gold answers are dataset strings; MGSM/MSVAMP/MMATH write them English-style in every
language (``2,125`` in ``mgsm_de.tsv`` too), so verifiers read golds with ``lang=None``
(decimal point). Values are exact :class:`fractions.Fraction`; ``1/2`` equals ``0.5``.
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal, localcontext
from fractions import Fraction
from functools import lru_cache

__all__ = ["DECIMAL_COMMA_LANGUAGES", "parse_number", "normalize_number", "format_number",
           "last_number_span", "ascii_fold"]

DECIMAL_COMMA_LANGUAGES = frozenset(
    "fr de es pt ru it nl pl tr id vi uk cs sk sl hr sr bs bg ro hu da sv no nb nn fi el "
    "et lv lt az kk be ca eu gl is mk sq ka hy uz mn".split()
)
MAX_ANSWER_CHARS = 500

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
_NUMBER = re.compile(
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
_LATEX_WRAP = re.compile(r"\\(?:text\w*|math\w*|boxed|fbox|operatorname)\s*\{([^{}]*)\}")
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
_UNITS = frozenset("km cm mm kg mg ml min mins hr hrs h mph kmh usd eur yen".split())


def ascii_fold(text: str) -> str:
    """Map full-width ASCII, native decimal digits and special spaces/minus signs to ASCII.

    The mapping is one character to one character, so offsets are preserved.

    >>> ascii_fold("１８，５")
    '18,5'
    >>> ascii_fold("๑๒ บาท")
    '12 บาท'
    """
    return text.translate(_FOLD)


def _strip_wrappers(text: str) -> str:
    for old, new in _LATEX_SUBS:
        if old in text:
            text = text.replace(old, new)
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


def _digits_value(body: str, lang: str | None) -> Fraction | None:
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


def _token_value(match: re.Match, lang: str | None) -> Fraction | None:
    body = match.group("body").rstrip(".,' ")
    value = _digits_value(body, lang) if body else None
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


def _glued_latin(text: str, start: int, end: int) -> bool:
    """A Latin/Greek letter touching the number (``2x``, ``x2``, ``2π``) unless a unit (``18km``)."""
    if start and (text[start - 1].isdigit() or _is_variable_letter(text[start - 1])):
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


@lru_cache(maxsize=65536)
def parse_number(text: str | None, lang: str | None = None) -> Fraction | None:
    """Exact value of a numeric answer, or None when ``text`` is not one number.

    >>> parse_number("**１８**", "ja"), parse_number("3万円", "ja"), parse_number("1.5万", "zh")
    (Fraction(18, 1), Fraction(30000, 1), Fraction(15000, 1))
    >>> parse_number("1.234,5", "de"), parse_number("1 234,5 €", "fr"), parse_number("1,234", "en")
    (Fraction(2469, 2), Fraction(2469, 2), Fraction(1234, 1))
    >>> parse_number("1,234", "de"), parse_number("答えは18です", "ja"), parse_number("x = 2y", "en")
    (Fraction(617, 500), Fraction(18, 1), None)
    """
    if not text or len(text) > MAX_ANSWER_CHARS:
        return None
    if text.isascii() and text.isdigit():
        return Fraction(int(text))
    core = _strip_wrappers(ascii_fold(text))
    fraction = _FRACTION.fullmatch(core)
    if fraction:
        sign, *parts = fraction.groups()
        num, den = [p for p in parts if p is not None]
        value = Fraction(int(num), int(den)) if int(den) else None
        return -value if value is not None and sign else value
    matches = list(_NUMBER.finditer(core))
    if len(matches) != 1:
        return _kanji_value(core) if not matches else None
    match = matches[0]
    rest = core[: match.start()] + " " + core[match.end():]
    if not _benign(rest) or _glued_latin(core, match.start(), match.end()):
        return None
    return _token_value(match, lang)


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


def normalize_number(text: str | None, lang: str | None = None) -> str | None:
    """Language-aware canonical form of a numeric answer, or None if it is not one number.

    >>> normalize_number("１８", "ja"), normalize_number("€18", "fr"), normalize_number("18 บาท", "th")
    ('18', '18', '18')
    >>> normalize_number("(−3,5 %)", "fr"), normalize_number("\\\\frac{1}{2}", "en")
    ('-3.5', '0.5')
    """
    value = parse_number(text, lang)
    return None if value is None else format_number(value)


def last_number_span(text: str) -> tuple[int, int] | None:
    """Offsets of the last number in ``text`` (with sign, separators, CJK magnitude, percent).

    >>> text = "3 boxes of 1,000 yen: 合計3万円"
    >>> start, end = last_number_span(text); text[start:end]
    '3万'
    """
    last, folded = None, ascii_fold(text)
    for last in _NUMBER.finditer(folded):
        pass
    if last is None:
        return None
    start, end = last.span()
    while end > start and folded[end - 1] in ".,' ":
        end -= 1
    return start, end
