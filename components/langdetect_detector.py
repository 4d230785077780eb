"""langdetect as a step-level detector: PCS's reference for SLC (``components.metrics.slc``).

Kept apart from ``components.language`` (lingua's detector): it answers over every language langdetect knows.
"""

from __future__ import annotations

from collections.abc import Iterable

from components.language_text import clean_for_detection, has_letters

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

