"""BM25 retrieval with ``bm25s`` (sparse-matrix BM25, offline), one index per language.

bm25s's own tokenizer splits on ``\\w\\w+`` word runs, which leaves Chinese,
Japanese and Thai text (no spaces) as one token per sentence. ``tokenize``
therefore hands bm25s ready tokens: NFKC lower-cased word runs for spaced
scripts, and overlapping character bigrams (single characters for one-character
runs) for Han, kana, Hangul and Thai runs — the usual language-independent
choice for CJK retrieval. Passages scoring 0 (no shared token) are not returned.

>>> tokenize("Tokyo est la capitale du Japon.")
['tokyo', 'est', 'la', 'capitale', 'du', 'japon']
>>> tokenize("日本の首都は東京")
['日本', '本の', 'の首', '首都', '都は', 'は東', '東京']
"""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path
from typing import Sequence

from components.retrieval.base import Passage

_UNSPACED = "\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_TOKEN = re.compile(rf"[{_UNSPACED}]+|[^\W{_UNSPACED}]+")
_UNSPACED_RUN = re.compile(rf"[{_UNSPACED}]+")


def tokenize(text: str) -> list[str]:
    """Word tokens for spaced scripts, character bigrams for CJK/Thai runs."""
    tokens: list[str] = []
    for run in _TOKEN.findall(unicodedata.normalize("NFKC", text).lower()):
        if _UNSPACED_RUN.fullmatch(run):
            tokens += [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]
        else:
            tokens.append(run)
    return tokens


class BM25Retriever:
    """One bm25s index per language, saved under ``<dir>/<lang>/`` next to its passages."""

    def __init__(self, indexes: dict[str, object], passages: dict[str, list[Passage]]) -> None:
        self.indexes = indexes
        self.passages = passages
        self.languages = tuple(indexes)

    @classmethod
    def build(cls, grouped: dict[str, list[Passage]]) -> "BM25Retriever":
        import bm25s

        indexes = {}
        for lang, passages in grouped.items():
            index = bm25s.BM25()
            index.index([tokenize(f"{p.title} {p.text}") or [""] for p in passages], show_progress=False)
            indexes[lang] = index
        return cls(indexes, dict(grouped))

    def save(self, directory: str | Path) -> None:
        for lang, index in self.indexes.items():
            target = Path(directory) / lang
            index.save(str(target), show_progress=False)
            write_passages(target / "passages.jsonl", self.passages[lang])

    @classmethod
    def load(cls, directory: str | Path, languages: Sequence[str]) -> "BM25Retriever":
        import bm25s

        indexes = {lang: bm25s.BM25.load(str(Path(directory) / lang), show_progress=False) for lang in languages}
        passages = {lang: read_passages(Path(directory) / lang / "passages.jsonl") for lang in languages}
        return cls(indexes, passages)

    def search(self, queries: Sequence[str], lang: str, k: int) -> list[list[Passage]]:
        if lang not in self.indexes or not queries:
            return [[] for _ in queries]
        k = min(k, len(self.passages[lang]))
        found, scores = self.indexes[lang].retrieve([tokenize(q) or [""] for q in queries], k=k, show_progress=False)
        return [[_scored(self.passages[lang][int(i)], float(s)) for i, s in zip(row, row_scores) if s > 0]
                for row, row_scores in zip(found, scores)]


def _scored(passage: Passage, score: float) -> Passage:
    return Passage(passage.id, passage.lang, passage.title, passage.text, score)


def write_passages(path: Path, passages: Sequence[Passage]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"id": p.id, "lang": p.lang, "title": p.title, "text": p.text} for p in passages]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def read_passages(path: Path) -> list[Passage]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [Passage(r["id"], r["lang"], r["title"], r["text"]) for r in rows]
