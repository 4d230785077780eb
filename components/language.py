"""Language detection for reasoning traces: one lingua detector per language set, and its readings.

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

A ``Reading`` is lingua's answer on one text: its top language, the margin of its confidence over the
runner-up's and the confidences (``compute_language_confidence_values``; the LCPR line level decides with
them whether a line can be judged, ``components.metrics.lcpr_lines``). ``MemoDetector`` reads each distinct
text once, in lingua's parallel batch API; ``detect_block`` gives a multi-line text the
character-weighted majority of its lines' languages (a Chinese trace with one Japanese line
stays Chinese: detecting the whole text would follow the kana).

The text side (scripts, ``clean_for_detection``, ``holds_words`` and the tokens that say nothing
about a language) is ``components.language_text``; its names are re-exported here.

A line of several non-Latin scripts (mixed-script noise) is read by ``one_script``'s rule, the same on
every call, where lingua's own rules would break a tie by hash-map order.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from components.language_text import (  # noqa: F401  (re-exported: callers import the text side from here)
    CAPITAL_WORDS,
    LETTER_CLASS,
    NUMERIC_CLASS,
    SCRIPT_RANGES,
    UNIT_WORDS,
    clean_for_detection,
    clean_paragraphs,
    has_letters,
    holds_words,
    scripts_of,
    split_paragraphs,
    tolerated_token,
    uses_latin_script,
)

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
