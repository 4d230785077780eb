"""What of a text can say its language: scripts, the cleaning before detection, and tokens that say nothing.

Math pulls detection toward English (``x``, ``cm``, ``frac``), so text is cleaned first:
``clean_for_detection`` removes code (fenced and inline), URLs, ``<think>`` tags, LaTeX math
(``$$..$$``, ``\\[..\\]``, ``\\(..\\)``, ``$..$`` by pandoc's rule: the opening ``$`` is followed
by a non-space, the closing one preceded by a non-space and not followed by a digit, so
"$5 and $6" is left alone; an escaped ``\\$`` is currency), ``\\boxed{..}``/``\\fbox{..}`` with
nested braces, then the names of the LaTeX commands left outside math (after the math, so
``$\\text{total} = 9$`` goes whole), arithmetic expressions (operands: numbers, numbers with a
unit letter, single Latin or Greek letters, up to three capitals such as ``AB``), then every
remaining digit. Newlines are kept, so line structure survives cleaning.

Some letters say nothing about the language of a line: units (``cm``, ``km``), short labels
(up to three capitals, ``AB``, but not capitalized words such as ``OK``), single Latin letters
(variables) and lone Greek letters (``π``). ``holds_words`` is False for a text whose only
letters are such tokens, so ``AB = 5 cm, π ≈ 3.14`` has no line to detect.

Written by hand (regular expressions over Unicode ranges): lingua detects a language, it does not
strip math or say which letters are symbols. ``components.language`` re-exports these names.

>>> clean_for_detection("So $x^2 = 9$, hence x + 3 = 6 and \\\\boxed{\\\\frac{1}{2}} (see https://a.b).")
'So , hence and (see ).'
>>> has_letters("12 + 3 = 15"), has_letters("x"), holds_words("cm, π"), holds_words("OK")
(False, True, False, True)
>>> uses_latin_script("pt"), uses_latin_script("ja")
(True, False)
"""

from __future__ import annotations

import functools
import re
import unicodedata

# Unicode ranges per script (character-class bodies for ``re``).
SCRIPT_RANGES: dict[str, str] = {
    "latin": "A-Za-z\u00aa\u00b5\u00ba\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u1e00-\u1eff"
    "\uff21-\uff3a\uff41-\uff5a",
    "greek": "\u0370-\u03ff\u1f00-\u1fff",
    "cyrillic": "\u0400-\u052f",
    "han": "\u3005-\u3007\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f",
    "kana": "\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f",
    "hangul": "\u1100-\u11ff\u3130-\u318f\uac00-\ud7af",
    "thai": "\u0e00-\u0e7f",
    "bengali": "\u0980-\u09ff",
    "telugu": "\u0c00-\u0c7f",
    "devanagari": "\u0900-\u097f",
    "arabic": "\u0600-\u06ff\u0750-\u077f\ufb50-\ufdff\ufe70-\ufeff",
    "hebrew": "\u0590-\u05ff",
    "armenian": "\u0530-\u058f",
    "georgian": "\u10a0-\u10ff",
    "gujarati": "\u0a80-\u0aff",
    "gurmukhi": "\u0a00-\u0a7f",
    "tamil": "\u0b80-\u0bff",
}

# Languages (among lingua's 75) not written in Latin script; every other one is Latin.
_NON_LATIN_SCRIPTS: dict[str, tuple[str, ...]] = {
    "ja": ("han", "kana"), "zh": ("han",), "ko": ("hangul",), "th": ("thai",),
    "bn": ("bengali",), "te": ("telugu",), "hi": ("devanagari",), "mr": ("devanagari",),
    "ar": ("arabic",), "fa": ("arabic",), "ur": ("arabic",), "he": ("hebrew",),
    "el": ("greek",), "hy": ("armenian",), "ka": ("georgian",), "gu": ("gujarati",),
    "pa": ("gurmukhi",), "ta": ("tamil",),
    **{code: ("cyrillic",) for code in ("ru", "uk", "be", "bg", "mk", "sr", "kk", "mn")},
}


def _numeric_class() -> str:
    """Character-class body of the BMP's numeric non-letters that ``\\d`` misses (², ½, ①, Ⅳ)."""
    chars = [chr(i) for i in range(0x10000) if chr(i).isnumeric() and not chr(i).isdecimal() and not chr(i).isalpha()]
    ranges, start = [], None
    for index, ch in enumerate(chars):
        if start is None:
            start = ch
        if index + 1 == len(chars) or ord(chars[index + 1]) != ord(ch) + 1:
            ranges.append(start if start == ch else f"{start}-{ch}")
            start = None
    return "".join(ranges)


NUMERIC_CLASS = _numeric_class()
# A letter: a word character that is neither a digit, a numeric sign nor "_" (str.isalpha, in re).
LETTER_CLASS = rf"[^\W\d_{NUMERIC_CLASS}]"
_LETTER = re.compile(LETTER_CLASS)
_LATIN_WORD = re.compile(f"[{SCRIPT_RANGES['latin']}]+")
_GREEK_CHAR = re.compile(f"[{SCRIPT_RANGES['greek']}]")
_LATIN_OR_GREEK_RUN = re.compile(f"[{SCRIPT_RANGES['latin']}]+|[{SCRIPT_RANGES['greek']}]+")
_OTHER_LETTER = re.compile(f"(?![{SCRIPT_RANGES['latin']}{SCRIPT_RANGES['greek']}]){LETTER_CLASS}")
UNIT_WORDS = frozenset(
    {"cm", "mm", "km", "kg", "mg", "ml", "dl", "cl", "kl", "ha", "min", "sec", "hr", "hrs",
     "mph", "kmh", "kcal", "cal", "am", "pm", "kw", "kwh"}
)
# All-capital English words models write in any language; never a geometry label here.
_LONGEST_UNIT = max(map(len, UNIT_WORDS))
CAPITAL_WORDS = frozenset("OK YES NO SO THE AND BUT NOT ALL ARE CAN FOR HOW NOW WHY YOU".split())
_THINK_TAG = re.compile(r"</?think>")
_CODE_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_URL = re.compile(r"(?:https?://|www\.)[^\s)\]>]+")
_DISPLAY_MATH = re.compile(r"\$\$.*?(?:\$\$|\Z)|\\\[.*?(?:\\\]|\Z)|\\\(.*?(?:\\\)|\Z)", re.S)
_INLINE_MATH = re.compile(r"\$(?=\S)[^$\n]*?(?<=\S)\$(?!\d)")
_BOX_OPEN = re.compile(r"\\(?:boxed|fbox)\s*\{")
_LATEX_COMMAND = re.compile(r"\\[A-Za-z]+\*?")
_SYMBOL = rf"(?<!{LETTER_CLASS})(?:[A-Za-z\u0370-\u03ff]|[A-Z]{{2,3}})(?!{LETTER_CLASS})"
_OPERAND = rf"(?:{_SYMBOL}|\d+(?:[.,]\d+)*[A-Za-z%]?)"
_OPERATOR = r"[-+*/^=<>×÷·−≤≥≈≠:%]"
_ARITHMETIC = re.compile(rf"{_OPERAND}(?:[ \t()\[\]]*{_OPERATOR}+[ \t()\[\]]*{_OPERAND})+")
_DIGITS_MARKUP = re.compile(rf"[\d{NUMERIC_CLASS}{{}}_^]+")
_SPACES = re.compile(r"[ \t]+")
_BLANK_LINE = re.compile(r"\n[ \t\r]*\n")


def _strip_boxed(text: str) -> str:
    """Remove every ``\\boxed{...}``/``\\fbox{...}`` including nested braces (unclosed: to the end)."""
    out, pos = [], 0
    for match in _BOX_OPEN.finditer(text):
        if match.start() < pos:
            continue
        out.append(text[pos : match.start()])
        depth, index = 1, match.end()
        while index < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[index], 0)
            index += 1
        pos = index
    out.append(text[pos:])
    return " ".join(out) if len(out) > 1 else out[0]


def clean_for_detection(text: str) -> str:
    """Strip code, URLs, LaTeX, arithmetic and digits; keep words and newlines (see module doc).

    >>> clean_for_detection("Alors 3 × 4 = 12 pommes.\\n$$\\n\\\\frac{a}{b}\\n$$\\nDonc 12.")
    'Alors pommes.\\n\\nDonc .'
    """
    if "think>" in text:
        text = _THINK_TAG.sub(" ", text)
    if "`" in text:
        text = _INLINE_CODE.sub(" ", _CODE_FENCE.sub(" ", text))
    if "://" in text or "www." in text:
        text = _URL.sub(" ", text)
    if "\\" in text:
        text = _DISPLAY_MATH.sub(" ", _strip_boxed(text.replace("\\$", " ")))
    if "$" in text:
        text = _INLINE_MATH.sub(" ", _DISPLAY_MATH.sub(" ", text))
    if "\\" in text:
        text = _LATEX_COMMAND.sub(" ", text)
    text = _DIGITS_MARKUP.sub(" ", _ARITHMETIC.sub(" ", text))
    return "\n".join(_SPACES.sub(" ", line).strip() for line in text.split("\n"))


def split_paragraphs(text: str) -> list[str]:
    r"""Non-empty paragraphs of ``text``, split at blank lines (lines holding only whitespace).

    >>> split_paragraphs("a\nb\n \n\nc\n")
    ['a\nb', 'c']
    """
    return [p.strip() for p in _BLANK_LINE.split(text) if p.strip()]


def clean_paragraphs(text: str) -> list[str]:
    """``clean_for_detection`` paragraph by paragraph (math never spans a blank line here)."""
    return [clean_for_detection(paragraph) for paragraph in split_paragraphs(text)]


def has_letters(text: str) -> bool:
    """True when ``text`` holds at least one letter of any script.

    >>> has_letters("３４５ + (7)"), has_letters("答")
    (False, True)
    """
    return _LETTER.search(text) is not None


def tolerated_token(run: str) -> bool:
    """A letter run of one script that says nothing about the language (see module doc).

    >>> [tolerated_token(t) for t in ("x", "π", "cm", "AB", "ＡＢ", "OK", "Step", "αβ")]
    [True, True, True, True, True, False, False, False]
    """
    latin = _LATIN_WORD.fullmatch(run) is not None
    if len(run) == 1:
        return latin or bool(_GREEK_CHAR.match(run))
    if not latin or len(run) > _LONGEST_UNIT:
        return False
    folded = unicodedata.normalize("NFKC", run)
    return folded.lower() in UNIT_WORDS or (folded.isupper() and len(folded) <= 3 and folded not in CAPITAL_WORDS)


@functools.lru_cache(maxsize=65536)
def holds_words(text: str) -> bool:
    """True when ``text`` holds a letter outside the tolerated tokens (units, labels, variables, π).

    >>> holds_words("AB = 5 cm, π ≈ 3.14"), holds_words("cm입니다"), holds_words("")
    (False, True, False)
    """
    if _OTHER_LETTER.search(text):
        return True
    return any(not tolerated_token(run.group()) for run in _LATIN_OR_GREEK_RUN.finditer(text))


def scripts_of(lang: str) -> tuple[str, ...]:
    """The scripts (keys of ``SCRIPT_RANGES``) a language is written in.

    >>> scripts_of("ja"), scripts_of("fr")
    (('han', 'kana'), ('latin',))
    """
    return _NON_LATIN_SCRIPTS.get(lang, ("latin",))


def uses_latin_script(lang: str) -> bool:
    """True for languages written in Latin script (en, fr, pt, sw, ...)."""
    return scripts_of(lang) == ("latin",)
