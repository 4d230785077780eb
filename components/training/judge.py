"""A judge model for rewards that ask one (M-Thinker's cross-lingual thinking alignment), on any backend.

A reward that declares a ``judge`` (the fields of a ``ModelSettings``) gets a
function from request texts to answers: the named generation backend
(``components.generation``: transformers, vLLM, an OpenAI-compatible API …)
answers each request once with the reward's ``judge_options`` (temperature, new
tokens); a local chat model gets its tokenizer's chat template around the
request (an API model applies its own server-side). Rewards import neither
settings nor backends, so the trainer attaches the judge when it builds them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

LOCAL_BACKENDS = ("transformers", "vllm")


def judge_function(judge: dict[str, Any], options: dict[str, Any], cache_dir: str | Path) -> Callable[[list[str]], list[str]]:
    """Requests -> answers with the judge model (built on first use)."""
    from components.settings import ModelSettings, SamplingSettings

    model = ModelSettings(**judge)
    sampling = SamplingSettings(**options)
    state: dict[str, Any] = {}

    def ask(requests: list[str]) -> list[str]:
        from components.generation import build_generator, load_tokenizer

        if "generator" not in state:
            state["generator"] = build_generator(model, Path(cache_dir))
            if model.chat and model.backend in LOCAL_BACKENDS:
                state["tokenizer"] = load_tokenizer(model, Path(cache_dir))
        prompts = [render(state.get("tokenizer"), request, model.thinking) for request in requests]
        return [samples[0].text if samples else "" for samples in state["generator"].generate(prompts, sampling)]

    return ask


def render(tokenizer: Any, request: str, thinking: bool) -> str:
    """The request in the judge's chat template (local chat models), else as it is."""
    if tokenizer is None:
        return request
    from components.data.prompts import render_chat

    return render_chat(tokenizer, [{"role": "user", "content": request}], thinking=thinking)


def attach_judge(reward: Any, cache_dir: str | Path) -> None:
    """Give ``reward`` its judge when it declares one (``reward.judge``); other rewards are left alone."""
    if getattr(reward, "judge", None) is not None:
        reward.ask_judge = judge_function(reward.judge, reward.judge_options, cache_dir)
