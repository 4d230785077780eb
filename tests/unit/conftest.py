"""Fixtures shared by the unit tests of the search loops (training's and evaluation's)."""

from __future__ import annotations

import pytest

from components.retrieval import build_index, load_retriever
from components.settings.search import RetrievalSettings


@pytest.fixture(scope="module")
def retriever(tmp_path_factory):
    """The offline QA corpus's BM25 index, built once per module with the default retrieval settings."""
    directory = tmp_path_factory.mktemp("index")
    build_index(RetrievalSettings(), directory)
    return load_retriever(directory, RetrievalSettings())
