"""Short-answer QA metrics of multilingual RAG (LcRL, "Experiments"): EM, fEM, c3Recall, answer language.

LcRL reports three numbers per language on MKQA and XOR-TyDi: flexible exact
match (fEM), character 3-gram recall (c3Recall) and the correct-language rate
(CLR). They compare a predicted short answer (the text of the last
``<answer>…</answer>`` block) with the gold answer and its aliases, after one
normalization shared by all of them:

* ``normalize_answer``: Unicode NFKC, lower case, every punctuation character
  (Unicode category ``P*``) and symbol of the ASCII set replaced by a space,
  runs of spaces collapsed, and the spaces *between* two CJK characters removed
  (tokenizers and translators insert them inconsistently: ``東京 都`` equals
  ``東京都``). Traditional and simplified Chinese are not unified.
* ``exact_match``: the normalized prediction equals a normalized gold.
* ``flexible_exact_match`` (fEM): a normalized gold occurs inside the normalized
  prediction ("the capital is Paris" counts for gold "Paris").
* ``c3_recall``: the share of the gold's distinct character 3-grams that occur
  in the prediction, maximized over the golds. A gold shorter than three
  characters after normalization has no 3-gram and scores 0 whatever the
  prediction, as in LcRL's released scorer (its recall of an empty 3-gram set is
  0): a question whose every gold is that short (``東京``, ``13``) adds 0 to
  c3Recall even when answered right, and only fEM credits it. The paper's
  c3Recall numbers are computed so, and the reward inherits it.
* ``answer_in_language``: CLR's per-answer judgement — the answer's detected
  language (lingua, ``components.language``) is the query's; an answer without
  letters (a number, a date in digits) is language-neutral and counts as correct.

``components.metrics.qa_registry`` holds them as entries of the metric table
(``components.metrics.registry``, kind ``qa``); this module scores single answers and
imports no metric object, so the sample (``components.metrics.sample``), which reads
answers with it, and the metric objects, which read samples, form no circle.

>>> normalize_answer("  Le  Mont-Blanc ! ")
'le mont blanc'
>>> normalize_answer("東京 都")
'東京都'
>>> flexible_exact_match("It is Paris.", ["paris"]), exact_match("It is Paris.", ["paris"])
(1.0, 0.0)
>>> c3_recall("Pariss", ["Paris"])
1.0
>>> round(c3_recall("Parfum", ["Paris"]), 4)   # {par} of {par, ari, ris}
0.3333
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_INFORMATION = re.compile(r"<information>.*?(</information>|$)", re.DOTALL)
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_CJK_GAP = re.compile(rf"(?<=[{_CJK}])\s+(?=[{_CJK}])")
_SPACES = re.compile(r"\s+")


def normalize_answer(text: str | None) -> str:
    """NFKC, lower case, punctuation to spaces, collapsed spaces, no space between CJK characters."""
    if not text:
        return ""
    text = unicodedata.normalize("NFKC", text).lower()
    text = "".join(" " if unicodedata.category(c).startswith("P") or c in "$+<=>^`|~" else c for c in text)
    text = _SPACES.sub(" ", text).strip()
    return _CJK_GAP.sub("", text)


def extract_answer(completion: str) -> str | None:
    """Text of the last ``<answer>…</answer>`` the model wrote: outside retrieved ``<information>`` blocks and the
    search loop's protocol notice (whose example tags are the environment's text); ``None`` if there is none.

    >>> extract_answer("<search>q</search><information><answer>x</answer></information><answer> Paris </answer>")
    'Paris'
    >>> extract_answer("no tags") is None
    True
    >>> from components.retrieval.protocol import INVALID_NOTICE
    >>> extract_answer("Paris, I think." + INVALID_NOTICE) is None
    True
    """
    from components.retrieval.protocol import INVALID_NOTICE

    text = _INFORMATION.sub("", completion or "").replace(INVALID_NOTICE.strip(), "")
    found = _ANSWER.findall(text)
    return found[-1].strip() if found else None


def _golds(golds: str | Iterable[str]) -> list[str]:
    items = [golds] if isinstance(golds, str) else list(golds)
    return [g for g in (normalize_answer(str(item)) for item in items if item is not None) if g]


def exact_match(prediction: str | None, golds: str | Iterable[str]) -> float:
    """1.0 when the normalized prediction equals a normalized gold.

    >>> exact_match("PARIS!", ["Paris", "Lutetia"])
    1.0
    """
    pred = normalize_answer(prediction)
    return float(bool(pred) and pred in _golds(golds))


def flexible_exact_match(prediction: str | None, golds: str | Iterable[str]) -> float:
    """fEM: 1.0 when a normalized gold occurs inside the normalized prediction.

    >>> flexible_exact_match("la capitale est paris", "Paris"), flexible_exact_match("", "Paris")
    (1.0, 0.0)
    """
    pred = normalize_answer(prediction)
    return float(bool(pred) and any(gold in pred for gold in _golds(golds)))


def char_ngrams(text: str, n: int = 3) -> set[str]:
    """Distinct character n-grams of ``text`` (empty when it is shorter than ``n``).

    >>> sorted(char_ngrams("abcd"))
    ['abc', 'bcd']
    """
    return {text[i : i + n] for i in range(len(text) - n + 1)}


def c3_recall(prediction: str | None, golds: str | Iterable[str], n: int = 3) -> float:
    """Character n-gram recall of the best gold in the prediction; a gold without an n-gram scores 0.

    >>> c3_recall("東京都です", ["東京"]), c3_recall("東京都です", ["東京", "東京都"]), c3_recall(None, ["abc"])
    (0.0, 1.0, 0.0)
    """
    pred = normalize_answer(prediction)
    if not pred:
        return 0.0
    pred_grams = char_ngrams(pred, n)
    best = 0.0
    for gold in _golds(golds):
        gold_grams = char_ngrams(gold, n)
        score = len(gold_grams & pred_grams) / len(gold_grams) if gold_grams else 0.0
        best = max(best, score)
    return best


def answer_in_language(answer: str | None, lang: str, detector) -> bool:
    """CLR for one answer: detected language equals ``lang``; answers without letters count as correct.

    ``detector`` is a ``components.language.LanguageDetector`` (or anything with ``detect``).
    """
    from components.language import has_letters

    if not answer:
        return False
    if not has_letters(answer):
        return True
    return detector.detect(answer) == lang


def mean_by_language(values: Sequence[float | None], langs: Sequence[str]) -> dict[str, float]:
    """Mean of the non-``None`` values per language.

    >>> mean_by_language([1.0, 0.0, None, 1.0], ["fr", "fr", "ja", "ja"])
    {'fr': 0.5, 'ja': 1.0}
    """
    sums: dict[str, list[float]] = {}
    for value, lang in zip(values, langs, strict=True):
        if value is not None:
            sums.setdefault(str(lang), []).append(float(value))
    return {lang: sum(v) / len(v) for lang, v in sums.items()}
