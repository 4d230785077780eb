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
Replace by PPO                   none: PPO learns a critic (a value model, GAE
                                 advantages) and trl 1.x has no PPO trainer
===============================  ==============================================

``grpo.coupling.baseline=batch`` (one baseline over the whole generation batch)
is a critic-free variant of its own, not PPO, and measures no row of the table.

>>> CouplingSettings.model_validate("language").mode
'language'
>>> LcRLSettings().rounds
[['query'], ['others'], ['en']]
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import model_validator

from components.settings.base import StrictSettings, changed_fields
from components.settings.evaluation import BenchmarkSettings
from components.settings.search import RetrievalSettings, SearchSettings

__all__ = ["CouplingSettings", "LcRLSettings", "RetrievalSettings", "SearchSettings", "lcrl_problems"]


class CouplingSettings(StrictSettings):
    """Which rollouts share a GRPO baseline.

    ``mode``: ``none`` (trl's per-prompt groups) or ``language`` (one group per
    value of the ``key`` column across languages: the source id of a translated
    RL set, the cross-language id of MGSM/MSVAMP/MMATH/MKQA rows). A coupled
    group must hold every language of ``languages`` (``None``: every language of
    the dataset); incomplete groups are dropped and counted. ``baseline``:
    ``group`` (GRPO) or ``batch`` (one mean and std over the generation batch,
    a critic-free batch baseline; not the paper's PPO, which learns a critic).
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


class LcRLSettings(SearchSettings):
    """The multilingual retrieval tool loop on trl's ``GRPOTrainer`` (``components.training.search_rollouts``).

    The loop's settings are ``SearchSettings``' (the same loop runs at test time,
    ``evaluation.search``), plus ``dataset``: the QA benchmark the training rows come
    from when ``grpo.dataset`` is unset (the flow writes them and sets ``grpo.dataset``)
    (``offline_qa``, ``mkqa``, ``xor_tydi``); each row's question is wrapped in the
    search instruction. The whole completion (model and inserted tokens) stays within
    ``grpo.max_completion_length``.
    """

    dataset: BenchmarkSettings | None = None


def lcrl_problems(section: Any) -> list[str]:
    """Cross-field rules of a GRPO section using LcRL (``coupling``/``lcrl``); empty when it is consistent."""
    problems = []
    server = section.model is not None and section.model.backend == "vllm" and section.vllm_mode == "server"
    if server and (section.coupling.mode != "none" or section.coupling.baseline != "group" or section.lcrl):
        problems.append("vllm_mode: coupled groups and the search loop need 'colocate' (server mode samples "
                        "num_generations completions of a single prompt per group)")
    return problems
