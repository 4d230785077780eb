"""Language detection for reasoning traces: one lingua detector per language set, and text cleaning.

Detection uses lingua (``lingua-language-detector``), as AdaMame appendix C.3 does for LCPR.
lingua is accurate on short text only when its candidate set is small: over the 13 languages
of ``BASE_LANGUAGES`` it builds in ~1 s on an idle 2-core machine (preloaded, ~200 MB; 2-5 s
while other jobs share the CPU); over all 75 languages it takes ~6 s, 1.2 GB and confuses
close languages (Portuguese read as Catalan). So the detector is built over ``BASE_LANGUAGES``
plus the languages being scored, once per process per language set (``get_detector`` is
cached; lingua shares loaded models between detectors, so adding one language costs ~0.5 s).
lingua's ``Language`` enum stays inside this module; everything else speaks ISO 639-1 codes.
Very short Portuguese lines can still read as Spanish ("Vamos somá-los com cuidado.": es 0.53,
pt 0.47); that is lingua's limit on a handful of words, not a candidate-set problem.

``MemoDetector`` detects each distinct text once, in lingua's parallel batch API
(``detect_languages_in_parallel_of``); ``detect_block`` gives a multi-line text the
character-weighted majority of its lines' languages (a Chinese trace with one Japanese line
stays Chinese: detecting the whole text would follow the kana).

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
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import lingua

BASE_LANGUAGES: frozenset[str] = frozenset(
    {"en", "es", "fr", "de", "ru", "zh", "ja", "th", "sw", "bn", "te", "pt", "ko"}
)

# English names of languages by ISO 639-1 code, for instructions that name a language (a translation
# prompt, a judge's prompt, the search instruction) and for file-name templates with ``{language}``.
LANGUAGE_NAMES = {
    "en": "English", "es": "Spanish", "fr": "French", "de": "German", "ru": "Russian",
    "zh": "Chinese", "ja": "Japanese", "th": "Thai", "sw": "Swahili", "bn": "Bengali",
    "te": "Telugu", "pt": "Portuguese", "ko": "Korean", "ar": "Arabic", "vi": "Vietnamese",
    "it": "Italian", "id": "Indonesian", "hi": "Hindi", "tr": "Turkish", "nl": "Dutch",
    "fi": "Finnish", "da": "Danish", "he": "Hebrew", "hu": "Hungarian", "km": "Khmer", "ms": "Malay",
    "no": "Norwegian", "pl": "Polish", "sv": "Swedish", "ca": "Catalan", "uk": "Ukrainian", "cs": "Czech",
}  # fmt: skip

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
_KANA = re.compile(f"[{SCRIPT_RANGES['kana']}]")
# the non-Latin scripts a line's letters can tie between in lingua's rules (Han and kana are Japanese's together)
# the non-Latin scripts ``one_script`` counts, in order: Han with kana (Japanese writes both), then the others
_SCRIPT_BODIES = [SCRIPT_RANGES["han"] + SCRIPT_RANGES["kana"]] + [
    body for name, body in SCRIPT_RANGES.items() if name not in ("latin", "han", "kana")]
_SCRIPT_GROUPS = [re.compile(f"[{body}]") for body in _SCRIPT_BODIES]
_ANY_SCRIPT = re.compile(f"[{''.join(_SCRIPT_BODIES)}]")
_OTHER_SCRIPTS = [re.compile(f"[{''.join(b for j, b in enumerate(_SCRIPT_BODIES) if j != i)}]")
                  for i in range(len(_SCRIPT_BODIES))]


def _script_of(char: str) -> int:
    return next(index for index, group in enumerate(_SCRIPT_GROUPS) if group.match(char))
_TIE = 1e-12  # lingua's detect_language_of answers nothing when its two best confidences are this close
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


@functools.cache
def _lingua_codes() -> dict[str, lingua.Language]:
    import lingua

    return {language.iso_code_639_1.name.lower(): language for language in lingua.Language.all()}


def is_supported(lang: str) -> bool:
    """True when ``lang`` is an ISO 639-1 code that lingua can detect.

    >>> is_supported("pt"), is_supported("xx"), is_supported("PT")
    (True, False, False)
    """
    return lang in _lingua_codes()


def scripts_of(lang: str) -> tuple[str, ...]:
    """The scripts (keys of ``SCRIPT_RANGES``) a language is written in.

    >>> scripts_of("ja"), scripts_of("fr")
    (('han', 'kana'), ('latin',))
    """
    return _NON_LATIN_SCRIPTS.get(lang, ("latin",))


def uses_latin_script(lang: str) -> bool:
    """True for languages written in Latin script (en, fr, pt, sw, ...)."""
    return scripts_of(lang) == ("latin",)


class Reading(NamedTuple):
    """lingua's answer on one text (``compute_language_confidence_values``): its top language (None: no letters,
    or a tie), the margin of the top confidence over the runner-up's (1.0 where lingua's rules name one language)
    and the confidences of ``MIN_CONFIDENCE`` or more, best first."""

    language: str | None
    margin: float
    confidences: tuple[tuple[str, float], ...] = ()

    def confidence(self, lang: str) -> float:
        """lingua's confidence in ``lang`` (0.0 below ``MIN_CONFIDENCE``)."""
        return next((value for code, value in self.confidences if code == lang), 0.0)


NO_READING = Reading(None, 0.0)
MIN_CONFIDENCE = 0.005  # smaller confidences are not kept (a memo holds many readings)


def one_script(text: str) -> str:
    """``text`` with one non-Latin script left when it holds two or more.

    lingua's rules can tie between the words of two scripts on such a line (mixed-script noise), and its
    choice then follows hash-map order, so one text got one language in one call and another in the next.
    The rule here is deterministic: the characters of each non-Latin script are counted (Han and kana
    together), the script with most wins (a tie goes to the first in ``SCRIPT_RANGES`` order) and the
    characters of the other non-Latin scripts become spaces; Latin letters stay. lingua's answer on what is
    left is the same on every call. A line of at most one non-Latin script is left whole.

    >>> one_script("场ジ ขข 文"), one_script("ขขข 场 ok"), one_script("Total 合計")
    ('场ジ    文', 'ขขข   ok', 'Total 合計')
    """
    first = _ANY_SCRIPT.search(text)
    if first is None or not _OTHER_SCRIPTS[_script_of(first.group())].search(text):
        return text
    counts = [len(group.findall(text)) for group in _SCRIPT_GROUPS]
    winner = max(range(len(counts)), key=lambda index: (counts[index], -index))
    others = "".join(body for index, body in enumerate(_SCRIPT_BODIES) if index != winner)
    return re.sub(f"[{others}]", " ", text)


class LanguageDetector:
    """A lingua detector over a fixed set of ISO 639-1 languages; answers ISO codes."""

    def __init__(self, languages: frozenset[str]) -> None:
        import lingua

        codes = _lingua_codes()
        self.languages = languages
        self._to_code = {codes[code]: code for code in languages}
        builder = lingua.LanguageDetectorBuilder.from_languages(*self._to_code)
        self._detector = builder.with_preloaded_language_models().build()

    def detect(self, text: str, *, clean: bool = True) -> str | None:
        """Top-1 language of ``text`` (cleaned first unless ``clean=False``); None without letters."""
        return self.read(text, clean=clean).language

    def read(self, text: str, *, clean: bool = True) -> Reading:
        """lingua's top language of ``text`` and its margin (see ``read_many``)."""
        return self.read_many([text], clean=clean)[0]

    def detect_many(self, texts: Sequence[str], *, clean: bool = True) -> list[str | None]:
        """``detect`` over many texts with lingua's parallel batch API."""
        return [reading.language for reading in self.read_many(texts, clean=clean)]

    def read_many(self, texts: Sequence[str], *, clean: bool = True) -> list[Reading]:
        """Each text's ``Reading``, from lingua's confidence values (its parallel batch API).

        The top language is what lingua's ``detect_language_of`` answers (``None`` when its two best
        languages are equal); a text of several non-Latin scripts is read as ``one_script`` makes it, and
        one holding kana that lingua reads as Chinese or Japanese is Japanese (lingua's own kana rule,
        which a tie between words of Han and of kana can bypass), with margin 1.0.
        """
        cleaned = [clean_for_detection(text) for text in texts] if clean else list(texts)
        positions = [index for index, text in enumerate(cleaned) if has_letters(text)]
        asked = [one_script(cleaned[index]) for index in positions]
        found = self._detector.compute_language_confidence_values_in_parallel(asked)
        result = [NO_READING] * len(cleaned)
        for index, text, values in zip(positions, asked, found, strict=True):
            result[index] = self._reading(text, values)
        return result

    def _reading(self, text: str, values: Sequence) -> Reading:
        if not values:
            return NO_READING
        top, runner_up = values[0].value, values[1].value if len(values) > 1 else 0.0
        language = self._to_code[values[0].language]
        if language in ("zh", "ja") and "ja" in self.languages and _KANA.search(text):
            return Reading("ja", 1.0, (("ja", 1.0),))
        kept = tuple((self._to_code[v.language], v.value) for v in values if v.value >= MIN_CONFIDENCE)
        return Reading(language, top - runner_up, kept) if top - runner_up > _TIE else NO_READING


class MemoDetector:
    """Wraps a ``LanguageDetector`` with a memo: ``prefetch`` batch-reads, ``detect`` and ``read`` look up.

    Scoring detects the same line once for LCPR, SLC and language consistency, and many
    rows at once through lingua's parallel API. ``max_entries`` bounds a long-lived memo:
    a prefetch that finds it fuller first drops every entry the new texts do not need.
    """

    def __init__(self, detector: LanguageDetector, *, max_entries: int | None = None) -> None:
        self.detector = detector
        self.languages = detector.languages
        self.max_entries = max_entries
        self._memo: dict[tuple[str, bool], Reading] = {}

    def _keep_only(self, keys: Iterable[tuple[str, bool]]) -> None:
        if self.max_entries is not None and len(self._memo) > self.max_entries:
            self._memo = {key: self._memo[key] for key in keys if key in self._memo}

    def _add(self, texts: Iterable[str], clean: bool) -> None:
        todo = list(dict.fromkeys(t for t in texts if (t, clean) not in self._memo))
        for text, reading in zip(todo, self.detector.read_many(todo, clean=clean), strict=True):
            self._memo[(text, clean)] = reading

    def prefetch(self, texts: Iterable[str], *, clean: bool = True) -> None:
        texts = list(dict.fromkeys(texts))
        self._keep_only((text, clean) for text in texts)
        self._add(texts, clean)

    def prefetch_blocks(self, blocks: Iterable[str]) -> None:
        """Prefetch, in one parallel batch, every text ``detect_block`` asks for on cleaned ``blocks``.

        ``detect_block`` runs once over the blocks with a recorder that answers from the memo
        and notes what it lacks; the notes are detected together, and the pass is repeated
        (at most twice more) in case the rule asks for more once it has the first answers.
        """
        blocks = list(dict.fromkeys(blocks))
        self._keep_only([(line, False) for block in blocks for line in block.split("\n")] +
                        [(block, False) for block in blocks])
        for _ in range(3):
            recorder = _MissRecorder(self._memo)
            for block in blocks:
                detect_block(recorder, block)
            if not recorder.missing:
                return
            self._add(recorder.missing, False)

    def read(self, text: str, *, clean: bool = True) -> Reading:
        key = (text, clean)
        if key not in self._memo:
            self._memo[key] = self.detector.read(text, clean=clean)
        return self._memo[key]

    def detect(self, text: str, *, clean: bool = True) -> str | None:
        return self.read(text, clean=clean).language


class _MissRecorder:
    """Answers ``detect`` from a memo and records what the memo lacks (answering None for it)."""

    def __init__(self, memo: dict[tuple[str, bool], Reading]) -> None:
        self.memo = memo
        self.missing: list[str] = []

    def detect(self, text: str, *, clean: bool = True) -> str | None:
        if (text, clean) not in self.memo:
            self.missing.append(text)
        return self.memo.get((text, clean), NO_READING).language


def detect_block(detector: LanguageDetector | MemoDetector, text: str) -> str | None:
    """Language of a cleaned multi-line ``text``: the character-weighted majority of its lines.

    Each line that holds words (``holds_words``) is detected; each language scores the number
    of characters of its lines; the highest score wins (a tie goes to the language met first).
    Detecting the whole text instead lets a minority line decide: lingua reads any kana as
    Japanese, so a Chinese trace with one Japanese line would be Japanese. With a
    ``MemoDetector`` the lines' detections are shared with the line-level check.
    """
    scores: dict[str, int] = {}
    for line in text.split("\n"):
        if holds_words(line):
            language = detector.detect(line, clean=False)
            if language is not None:
                scores[language] = scores.get(language, 0) + len(line)
    return max(scores, key=scores.__getitem__) if scores else None


@functools.lru_cache(maxsize=8)
def _build(languages: frozenset[str]) -> LanguageDetector:
    return LanguageDetector(languages)


def get_detector(languages: Iterable[str] = ()) -> LanguageDetector:
    """The process-wide detector over ``BASE_LANGUAGES`` plus ``languages`` (built once per set).

    Raises ``ValueError`` naming any code lingua does not know.
    """
    requested = set(languages)
    unknown = sorted(code for code in requested if not is_supported(code))
    if unknown:
        raise ValueError(f"unknown language code(s) {unknown}; expected ISO 639-1 codes lingua supports")
    return _build(BASE_LANGUAGES | requested)


SHARED_MEMO_ENTRIES = 1 << 18


@functools.lru_cache(maxsize=8)
def _shared_memo(languages: frozenset[str]) -> MemoDetector:
    return MemoDetector(get_detector(languages), max_entries=SHARED_MEMO_ENTRIES)


def batch_detector(languages: Iterable[str] = ()) -> MemoDetector:
    """The process-wide ``MemoDetector`` over ``get_detector(languages)``, shared by its callers.

    The GRPO language rewards of one trainer step each prefetch their texts for the whole
    generation batch in one parallel call, and a text one reward detected is not detected
    again by another. The memo holds up to ``SHARED_MEMO_ENTRIES`` entries between batches.
    """
    return _shared_memo(frozenset(get_detector(languages).languages))


LANGDETECT_MEMO_ENTRIES = 200_000  # a long training run's distinct steps: the memo starts over past this


class LangdetectDetector:
    """langdetect (a port of Shuyo's language-detection library, 55 languages), PCS's step-language detector.

    PCS strips the math from each reasoning step with regular expressions and identifies the step's
    language with langdetect. This detector is that reference: each (cleaned) step is detected whole,
    over every language langdetect knows (no candidate set, unlike lingua here), and its top answer is
    the step's language; ``zh-cn``/``zh-tw`` answer ``zh``, and a text langdetect finds no feature in
    answers ``None``. langdetect samples n-grams at random, so one text can get different answers from
    one call to the next; ``DetectorFactory.seed = 0`` (set before every detection, since it is global
    state) makes every answer reproducible. Answers are memoised (langdetect is pure Python, a few
    milliseconds a step); ``detect_step`` is what ``components.metrics.slc`` asks a step-level detector.
    """

    name = "langdetect"

    def __init__(self) -> None:
        import langdetect  # noqa: F401  (fails here, not mid-run, when the package is missing)

        self._memo: dict[str, str | None] = {}

    def detect(self, text: str, *, clean: bool = True) -> str | None:
        """Top-1 langdetect language of ``text`` (cleaned first unless ``clean=False``); None without letters."""
        if clean:
            text = clean_for_detection(text)
        if not has_letters(text):
            return None
        if text not in self._memo:
            if len(self._memo) >= LANGDETECT_MEMO_ENTRIES:
                self._memo.clear()
            self._memo[text] = _langdetect_top(text)
        return self._memo[text]

    def detect_step(self, step: str) -> str | None:
        """The language of one cleaned step, detected whole (PCS's rule)."""
        return self.detect(step, clean=False)

    def prefetch_blocks(self, blocks: Iterable[str]) -> None:
        """Nothing to batch: langdetect has no parallel API (the memo fills as steps are asked for)."""


def _langdetect_top(text: str) -> str | None:
    from langdetect import DetectorFactory, detect
    from langdetect.lang_detect_exception import LangDetectException

    DetectorFactory.seed = 0
    try:
        code = detect(text)
    except LangDetectException:  # no feature langdetect can read (digits and symbols only)
        return None
    return code.split("-")[0]

