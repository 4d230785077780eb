"""Retrievers behind one interface (``Retriever.search``), with an index built once and read back.

Registry ``RETRIEVERS``: ``bm25`` (bm25s, offline) and ``dense``
(sentence-transformers; LcRL uses ``intfloat/multilingual-e5-base``).
``build_index`` reads a passage corpus (``components.retrieval.base``), builds
one index per language and writes it under the directory it is given with a
``meta.json`` (retriever, languages, model, passage counts, skipped rows);
``load_retriever`` opens such a directory. The caller decides where the
directory lives (the GRPO flow keys it by corpus and settings, so it is built
once and reused like any task output).

>>> sorted(RETRIEVERS)
['bm25', 'dense']
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from components.retrieval.base import Passage, Retriever, by_language, format_information, read_corpus, round_languages

if TYPE_CHECKING:
    from components.settings.lcrl import RetrievalSettings

__all__ = ["Passage", "RETRIEVERS", "Retriever", "build_index", "default_corpus", "format_information",
           "load_retriever", "round_languages"]

META = "meta.json"


def _bm25(grouped: dict, settings: "RetrievalSettings") -> Any:
    from components.retrieval.bm25 import BM25Retriever

    return BM25Retriever.build(grouped)


def _dense(grouped: dict, settings: "RetrievalSettings") -> Any:
    from components.retrieval.dense import DenseRetriever

    return DenseRetriever.build(grouped, settings.model, settings.device, settings.batch_size)


RETRIEVERS: dict[str, Callable[[dict, "RetrievalSettings"], Any]] = {
    "bm25": _bm25,
    "dense": _dense,
}


def default_corpus() -> Path:
    """The packaged offline multilingual corpus (``components/data/offline_qa/corpus.jsonl``)."""
    return Path(__file__).resolve().parents[1] / "data" / "offline_qa" / "corpus.jsonl"


def build_index(settings: "RetrievalSettings", out_dir: str | Path) -> dict:
    """Build the per-language indexes of ``settings.corpus`` under ``out_dir``; return the summary written to meta."""
    corpus = Path(settings.corpus) if settings.corpus else default_corpus()
    passages, errors = read_corpus(corpus)
    grouped = by_language(passages, settings.languages)
    retriever = RETRIEVERS[settings.retriever](grouped, settings)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    retriever.save(out_dir)
    meta = {"retriever": settings.retriever, "languages": list(grouped), "model": settings.model,
            "corpus": str(corpus), "passages": {lang: len(p) for lang, p in grouped.items()},
            "skipped": len(errors), "errors": errors[:50]}
    (out_dir / META).write_text(json.dumps(meta, indent=1, ensure_ascii=False), encoding="utf-8")
    return meta


def load_retriever(index_dir: str | Path, settings: "RetrievalSettings") -> Retriever:
    """Open an index written by ``build_index`` (the encoder settings apply to dense indexes)."""
    meta_path = Path(index_dir) / META
    if not meta_path.is_file():
        raise FileNotFoundError(f"{index_dir}: no retrieval index ({META} missing); build it with build_index")
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    if meta["retriever"] == "bm25":
        from components.retrieval.bm25 import BM25Retriever

        return BM25Retriever.load(index_dir, meta["languages"])
    from components.retrieval.dense import DenseRetriever

    return DenseRetriever.load(index_dir, meta["languages"], meta["model"], settings.device, settings.batch_size)
