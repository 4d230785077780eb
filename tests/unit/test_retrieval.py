"""Retrieval over the packaged offline corpus: BM25 per language, rounds, index build/load, bad rows."""

from __future__ import annotations

import json

import pytest

from components.retrieval import build_index, default_corpus, format_information, load_retriever, round_languages
from components.retrieval.base import read_corpus
from components.retrieval.bm25 import tokenize
from components.settings.lcrl import LcRLSettings, RetrievalSettings

LANGS = ["en", "fr", "de", "es", "ja", "zh"]


@pytest.fixture(scope="module")
def bm25(tmp_path_factory):
    directory = tmp_path_factory.mktemp("index")
    meta = build_index(RetrievalSettings(retriever="bm25"), directory)
    return directory, meta, load_retriever(directory, RetrievalSettings())


def test_packaged_corpus_coverage():
    passages, errors = read_corpus(default_corpus())
    assert not errors
    counts = {lang: sum(p.lang == lang for p in passages) for lang in LANGS}
    assert counts == {"en": 24, "fr": 16, "de": 16, "es": 16, "ja": 16, "zh": 16}


def test_index_meta_and_search_per_language(bm25):
    _, meta, retriever = bm25
    assert sorted(meta["languages"]) == sorted(LANGS) and meta["skipped"] == 0
    (fr,), (ja,) = retriever.search(["capitale du Japon"], "fr", 1), retriever.search(["日本の首都"], "ja", 1)
    assert fr[0].id == "oqa-01-fr" and fr[0].lang == "fr" and fr[0].score > 0
    assert ja[0].id == "oqa-01-ja"
    assert [p.id for p in retriever.search(["capitale du Canada"], "fr", 3)[0]] != ["oqa-14-fr"]  # a gap in fr
    assert retriever.search(["zzzz qqqq"], "en", 3) == [[]]          # no shared token: nothing
    assert retriever.search(["Ottawa"], "ko", 3) == [[]]              # a language without index
    assert tokenize("北京") == ["北京"] and tokenize("Ｔｏｋｙｏ!") == ["tokyo"]


@pytest.mark.parametrize("index, query_lang, expected", [
    (0, "fr", ["fr"]), (1, "fr", ["en", "de", "es", "ja", "zh"]), (2, "fr", ["en"]), (7, "ja", ["en"]),
])
def test_hierarchical_rounds(index, query_lang, expected):
    assert round_languages(LcRLSettings().rounds, index, query_lang, LANGS) == expected


def test_single_language_ablation_and_explicit_codes():
    assert round_languages([["query"]], 4, "de", LANGS) == ["de"]
    assert round_languages([["all"]], 0, "de", LANGS) == LANGS
    assert round_languages([["ko", "en"]], 0, "de", LANGS) == ["en"]   # languages without an index are skipped


def test_information_cut_per_passage(bm25):
    _, _, retriever = bm25
    text = format_information([("en", retriever.search(["Eiffel Tower city"], "en", 2)[0])], passage_chars=30)
    first = text.splitlines()[0]
    assert first.startswith("[en] 1. Eiffel Tower: ") and len(first) <= len("[en] 1. ") + 30


def test_bad_corpus_rows_are_reported_and_skipped(tmp_path):
    corpus = tmp_path / "c.jsonl"
    rows = [{"id": "1", "lang": "en", "title": "t", "text": "Paris is in France."}, {"id": "2", "lang": "en"}]
    corpus.write_text("\n".join(json.dumps(r) for r in rows) + "\n{bad\n", encoding="utf-8")
    meta = build_index(RetrievalSettings(corpus=str(corpus)), tmp_path / "index")
    assert meta["passages"] == {"en": 1} and meta["skipped"] == 2
    assert meta["errors"] == [f"{corpus}:2: field text: missing or empty", f"{corpus}:3: field json: not valid JSON "
                              "(Expecting property name enclosed in double quotes)"]
    with pytest.raises(ValueError, match=r"no passage in \['de'\]"):
        build_index(RetrievalSettings(corpus=str(corpus), languages=["de"]), tmp_path / "other")
    with pytest.raises(FileNotFoundError, match="no retrieval index"):
        load_retriever(tmp_path / "missing", RetrievalSettings())
