"""Dense multilingual retrieval with sentence-transformers (LcRL: ``intfloat/multilingual-e5-base``).

Passages and queries are embedded by the same encoder, L2-normalized, and
ranked by inner product (cosine) within one language's matrix, saved as
``<dir>/<lang>/embeddings.npy`` beside its passages. E5 models are trained with
the prefixes ``query: `` and ``passage: ``; they are added when the model name
contains ``e5``. The encoder downloads from the Hugging Face hub (or reads a
local directory); the search loop loads it once per process.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from components.retrieval.base import Passage
from components.retrieval.bm25 import read_passages, write_passages


def _prefixes(model_name: str) -> tuple[str, str]:
    """``(query prefix, passage prefix)`` for ``model_name``.

    >>> _prefixes("intfloat/multilingual-e5-base"), _prefixes("my-encoder")
    (('query: ', 'passage: '), ('', ''))
    """
    return ("query: ", "passage: ") if "e5" in model_name.lower() else ("", "")


def load_encoder(model_name: str, device: str = "auto"):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(model_name, device=None if device == "auto" else device)


class DenseRetriever:
    """Per-language embedding matrices searched by inner product."""

    def __init__(self, encoder, model_name: str, matrices: dict, passages: dict[str, list[Passage]],
                 batch_size: int = 64) -> None:
        self.encoder = encoder
        self.model_name = model_name
        self.matrices = matrices
        self.passages = passages
        self.batch_size = batch_size
        self.languages = tuple(matrices)

    def _encode(self, texts: Sequence[str], prefix: str):
        return self.encoder.encode([prefix + t for t in texts], batch_size=self.batch_size,
                                   normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)

    @classmethod
    def build(cls, grouped: dict[str, list[Passage]], model_name: str, device: str = "auto",
              batch_size: int = 64) -> "DenseRetriever":
        encoder = load_encoder(model_name, device)
        retriever = cls(encoder, model_name, {}, dict(grouped), batch_size)
        passage_prefix = _prefixes(model_name)[1]
        for lang, passages in grouped.items():
            texts = [f"{p.title}. {p.text}" if p.title else p.text for p in passages]
            retriever.matrices[lang] = retriever._encode(texts, passage_prefix)
        retriever.languages = tuple(grouped)
        return retriever

    def save(self, directory: str | Path) -> None:
        import numpy as np

        for lang, matrix in self.matrices.items():
            target = Path(directory) / lang
            target.mkdir(parents=True, exist_ok=True)
            np.save(target / "embeddings.npy", matrix)
            write_passages(target / "passages.jsonl", self.passages[lang])

    @classmethod
    def load(cls, directory: str | Path, languages: Sequence[str], model_name: str, device: str = "auto",
             batch_size: int = 64) -> "DenseRetriever":
        import numpy as np

        matrices = {lang: np.load(Path(directory) / lang / "embeddings.npy") for lang in languages}
        passages = {lang: read_passages(Path(directory) / lang / "passages.jsonl") for lang in languages}
        return cls(load_encoder(model_name, device), model_name, matrices, passages, batch_size)

    def search(self, queries: Sequence[str], lang: str, k: int) -> list[list[Passage]]:
        if lang not in self.matrices or not queries:
            return [[] for _ in queries]
        scores = self._encode(queries, _prefixes(self.model_name)[0]) @ self.matrices[lang].T
        out = []
        for row in scores:
            best = row.argsort()[::-1][:k]
            out.append([Passage(*_fields(self.passages[lang][int(i)]), float(row[i])) for i in best])
        return out


def _fields(passage: Passage) -> tuple[str, str, str, str]:
    return passage.id, passage.lang, passage.title, passage.text
