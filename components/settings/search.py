"""Settings of search-augmented generation (LcRL, after Search-R1): the retriever and the ``<search>`` loop.

One loop, two places: GRPO rollouts (``grpo.lcrl``, ``components.training.search_rollouts``)
and test-time generation of QA benchmarks (``evaluation.search``,
``components.generation.search_generator``), so a model is evaluated with the retrieval it
was trained with. The policy writes ``<search>query</search>`` or
``<answer>...</answer>``; retrieved passages are inserted between turns. Retrieval
per round: ``rounds[k]`` lists the languages searched at the (k+1)-th search
(``query``: the query's language, ``others``: every other corpus language, ``all``, or
an ISO 639-1 code); the last entry holds for later rounds.

>>> SearchSettings().rounds
[['query'], ['others'], ['en']]
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from components.settings.base import MAX_BATCH, MAX_TOKENS, ProjectPath, StrictSettings, changed_fields, registered

ROUND_WORDS = ("query", "others", "all")


class RetrievalSettings(StrictSettings):
    """The retriever behind ``<search>``: one index per corpus language (``components.retrieval``).

    ``retriever``: ``bm25`` (bm25s, offline) or ``dense`` (sentence-transformers
    ``model``; LcRL: multilingual-e5-base). ``corpus``: JSONL of passages
    (``id``, ``lang``, ``title``, ``text``); ``None`` is the packaged offline
    corpus. ``languages``: the corpus languages indexed (``None``: all).
    ``index``: a built index directory (the flow builds and caches it; set it to
    reuse one). ``passage_chars``: each passage is cut to this many characters
    in the prompt (200 in the released code).
    """

    OPERATIONAL = {"device": "where the encoder runs, not what it computes",
                   "batch_size": "how many texts are encoded at once, not their embeddings"}

    retriever: registered("retriever") = "bm25"  # type: ignore[valid-type]
    corpus: ProjectPath | None = None
    languages: list[str] | None = None
    model: str = "intfloat/multilingual-e5-base"
    device: Literal["auto", "cpu", "cuda"] = "auto"
    batch_size: int = Field(default=64, ge=1, le=MAX_BATCH)
    top_k: int = Field(default=3, ge=1, le=1_000)
    passage_chars: int = Field(default=200, ge=20, le=1_000_000)
    index: ProjectPath | None = None

    @model_validator(mode="after")
    def _encoder_only_for_dense(self) -> "RetrievalSettings":
        if self.retriever != "dense" and changed_fields(self, ("model", "device", "batch_size")):
            raise ValueError("model/device/batch_size set the dense encoder; the bm25 retriever reads none of them")
        return self


class SearchSettings(StrictSettings):
    """The multilingual retrieval tool loop (see the module docstring).

    ``max_searches``: searches allowed before a last answer turn (3 in the released
    code); ``max_turn_tokens``: new tokens per model turn; ``max_information_tokens``:
    tokens of one ``<information>`` block.
    """

    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    rounds: list[list[str]] = Field(default_factory=lambda: [["query"], ["others"], ["en"]], min_length=1)
    max_searches: int = Field(default=3, ge=0, le=100)
    max_turn_tokens: int = Field(default=256, ge=1, le=MAX_TOKENS)
    max_information_tokens: int = Field(default=600, ge=16, le=MAX_TOKENS)

    @field_validator("rounds")
    @classmethod
    def _round_words(cls, rounds: list[list[str]]) -> list[list[str]]:
        for index, entry in enumerate(rounds):
            if not entry:
                raise ValueError(f"rounds.{index}: empty (name 'query', 'others', 'all' or ISO 639-1 codes)")
            bad = [w for w in entry if w not in ROUND_WORDS and not (len(w) == 2 and w.isalpha() and w.islower())]
            if bad:
                raise ValueError(f"rounds.{index}: {bad} are neither {ROUND_WORDS} nor ISO 639-1 codes")
        return rounds
