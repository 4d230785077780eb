"""Whether a generation's length fits the model's context, when the context is knowable.

The context is the model's ``max_position_embeddings`` (``components.planning.models``:
a local config, else the known-models table). Two things cannot do what they
say: a ``max_model_len`` above it (vLLM refuses to start the engine with it,
after the model is loaded on a GPU), and ``max_new_tokens`` at or above the
usable context (``min(max_model_len, context)``), which leaves no room for the
prompt. When the context is not knowable (a hub model outside the table, a
registered version, an API model) nothing is checked and the plan says so.
``max_new_tokens`` at or above ``max_model_len`` itself is a settings rule
(``components.settings``), refused when the profile loads.
"""

from __future__ import annotations

from typing import Any

from components.planning.models import ModelFacts, model_facts
from components.planning.stage import Problem

VLLM_BACKENDS = ("vllm", "vllm-server")


def facts_of(model: Any, project_dir: str | None) -> ModelFacts:
    """What is known of the weights a ``ModelSettings`` runs (an adapter does not change the base's figures)."""
    if model.backend == "openai":
        return ModelFacts(name=model.model, source="an API model: no GPU, context decided by the provider")
    return model_facts(model.model, project_dir)


def dtype_of(model: Any) -> str:
    """The dtype the weights run in (``auto``: bfloat16 on CUDA, float32 on CPU)."""
    if model.dtype != "auto":
        return model.dtype
    return "float32" if model.device == "cpu" else "bfloat16"


def on_gpu(model: Any) -> bool:
    """Whether the model runs on a GPU when one is there (not an API model, not pinned to the CPU)."""
    return model.backend != "openai" and model.device != "cpu"


def context_lines(stage: str, key: str, model: Any, new_tokens: int, facts: ModelFacts,
                  new_tokens_key: str) -> tuple[list[tuple[str, str]], list[Problem]]:
    """The context line of one generating model, and its problems (``key``: the model's dotted key)."""
    if model.backend == "openai":
        return [], []
    context, limit = facts.context, model.max_model_len
    if context is None:
        return [("context", f"unknown ({facts.source}): lengths not checked")], []
    problems = []
    if limit is not None and limit > context and model.backend in VLLM_BACKENDS:
        problems.append(Problem(stage, (f"{key}.max_model_len",),
                                f"{limit:,} is above the context of {model.model} ({context:,}, its "
                                f"max_position_embeddings: {facts.source}); vLLM refuses to start with it"))
    usable = min(limit, context) if limit is not None else context
    if new_tokens >= usable:
        problems.append(Problem(stage, (new_tokens_key, f"{key}.max_model_len"),
                                f"{new_tokens:,} new tokens leave no room for a prompt in the usable context of "
                                f"{usable:,} tokens ({model.model}: {context:,})"))
    room = f"{usable - new_tokens:,} tokens left for the prompt" if new_tokens < usable else "no room for a prompt"
    line = f"{usable:,} usable of {context:,} ({model.model}); {new_tokens:,} new tokens, {room}"
    return [("context", line)], problems
