"""Settings of LcRL (arXiv 2601.14896) inside the GRPO section: coupled groups, retrieval, the search tool loop.

Two parts, usable apart:

* ``grpo.coupling`` (``CouplingSettings``) — which rollouts share one GRPO
  baseline. ``none``: trl's own groups (the rollouts of one prompt);
  ``language``: the rollouts of the equivalent queries in every language of a
  source id form one group (LcRL "language-coupled GRPO"). Written as a plain
  string (``coupling: language``) or as a mapping.
* ``grpo.lcrl`` (``LcRLSettings``) — the multilingual RAG rollout: the policy
  writes ``<search>query</search>`` or ``<answer>…</answer>``; retrieved passages
  are inserted between turns and masked out of the loss. Retrieval per round:
  ``rounds[k]`` lists the languages searched at the (k+1)-th search (``query``:
  the query's language, ``others``: every other corpus language, ``all``, or an
  ISO 639-1 code); the last entry holds for later rounds.

The paper's ablation table as settings (``components.training.coupling`` and
``components.rewards.lcrl`` read them):

===============================  ==============================================
paper row                        setting
===============================  ==============================================
w/o Lc Reward                    ``grpo.rewards.0.params.penalty_weight=0``
w/o c3Recall Reward (EM)         ``grpo.rewards.0.params.answer_metric=exact_match``
w/o Lc Rollout                   ``grpo.coupling=none``
w/o multi-language rollout       ``grpo.lcrl.rounds=[[query]]``
Replace by PPO                   ``grpo.coupling.baseline=batch`` (one baseline
                                 over the whole batch; trl has no critic here)
===============================  ==============================================

>>> CouplingSettings.model_validate("language").mode
'language'
>>> LcRLSettings().rounds
[['query'], ['others'], ['en']]
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from components.settings.base import ProjectPath, StrictSettings, changed_fields, registered
from components.settings.evaluation import BenchmarkSettings

ROUND_WORDS = ("query", "others", "all")


class CouplingSettings(StrictSettings):
    """Which rollouts share a GRPO baseline.

    ``mode``: ``none`` (trl's per-prompt groups) or ``language`` (one group per
    value of the ``key`` column across languages: the source id of a translated
    RL set, the cross-language id of MGSM/MSVAMP/MMATH/MKQA rows). A coupled
    group must hold every language of ``languages`` (``None``: every language of
    the dataset); incomplete groups are dropped and counted. ``baseline``:
    ``group`` (GRPO) or ``batch`` (one mean and std over the generation batch:
    the paper's PPO ablation without a critic).
    """

    mode: Literal["none", "language"] = "none"
    baseline: Literal["group", "batch"] = "group"
    key: str = "id"
    languages: list[str] | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_word(cls, value: Any) -> Any:
        return {"mode": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _key_only_when_coupled(self) -> "CouplingSettings":
        if self.mode == "none" and changed_fields(self, ("key", "languages")):
            raise ValueError("key/languages define coupled groups; they are not read with mode 'none'")
        return self


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
    batch_size: int = Field(default=64, ge=1)
    top_k: int = Field(default=3, ge=1)
    passage_chars: int = Field(default=200, ge=20)
    index: ProjectPath | None = None

    @model_validator(mode="after")
    def _encoder_only_for_dense(self) -> "RetrievalSettings":
        if self.retriever != "dense" and changed_fields(self, ("model", "device", "batch_size")):
            raise ValueError("model/device/batch_size set the dense encoder; the bm25 retriever reads none of them")
        return self


class LcRLSettings(StrictSettings):
    """The multilingual retrieval tool loop on trl's ``GRPOTrainer`` (``components.training.search_loop``).

    ``dataset``: the QA benchmark the training rows come from when
    ``grpo.dataset`` is unset (the flow writes them and sets ``grpo.dataset``) (``offline_qa``, ``mkqa``, ``xor_tydi``); each row's
    question is wrapped in the search instruction. ``max_searches``: searches
    allowed before a last answer turn (3 in the released code);
    ``max_turn_tokens``: new tokens per model turn; ``max_information_tokens``:
    tokens of one ``<information>`` block. The whole completion (model and
    inserted tokens) stays within ``grpo.max_completion_length``.
    """

    dataset: BenchmarkSettings | None = None
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    rounds: list[list[str]] = Field(default_factory=lambda: [["query"], ["others"], ["en"]], min_length=1)
    max_searches: int = Field(default=3, ge=0)
    max_turn_tokens: int = Field(default=256, ge=1)
    max_information_tokens: int = Field(default=600, ge=16)

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


def lcrl_problems(section: Any) -> list[str]:
    """Cross-field rules of a GRPO section using LcRL (``coupling``/``lcrl``); empty when it is consistent."""
    problems = []
    server = section.model is not None and section.model.backend == "vllm" and section.vllm_mode == "server"
    if server and (section.coupling.mode != "none" or section.coupling.baseline != "group" or section.lcrl):
        problems.append("vllm_mode: coupled groups and the search loop need 'colocate' (server mode samples "
                        "num_generations completions of a single prompt per group)")
    return problems
