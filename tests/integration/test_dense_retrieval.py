"""The dense retriever's code path (sentence-transformers) offline, with the tiny from-config model as encoder.

LcRL uses ``intfloat/multilingual-e5-base`` from the hub; here sentence-transformers
wraps the tiny Qwen2 directory (mean pooling) so the build -> save -> load ->
search path runs without the network. Random weights: mechanics only.
"""

from __future__ import annotations

import json

from components.retrieval import build_index, load_retriever
from components.settings import RetrievalSettings


def test_dense_index_round_trip(tiny_model_dir, tmp_path):
    settings = RetrievalSettings(retriever="dense", model=str(tiny_model_dir), device="cpu", batch_size=16,
                                 languages=["en", "ja"])
    meta = build_index(settings, tmp_path / "index")
    assert meta["passages"] == {"en": 24, "ja": 16}
    assert json.loads((tmp_path / "index" / "meta.json").read_text())["retriever"] == "dense"
    retriever = load_retriever(tmp_path / "index", settings)
    (hits,) = retriever.search(["capital of Japan"], "en", 3)
    assert len(hits) == 3 and all(h.lang == "en" for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert retriever.search(["東京"], "fr", 3) == [[]]   # fr was not indexed
