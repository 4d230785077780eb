"""A generation asking for more new tokens than its vLLM context holds.

vLLM fits the prompt and the completion into ``max_model_len`` tokens; a
``sampling.max_new_tokens`` at or above it leaves no room for any prompt, so the
length the profile states can never be generated. The rule needs only the
settings, so it is refused when the profile loads, naming both keys. Whether
``max_model_len`` (or the length itself) fits the *model's* context needs the
model's configuration: ``polyreason plan`` checks that (``components.planning``).
"""

from __future__ import annotations

from typing import Any, Iterator

VLLM_BACKENDS = ("vllm", "vllm-server")


def generations(profile: Any) -> Iterator[tuple[str, Any, str, Any]]:
    """``(model key, model, sampling key, sampling)`` of every generation the profile configures."""
    data, grpo, evaluation = profile.data, profile.grpo, profile.evaluation
    if evaluation is not None:
        yield "evaluation.model", evaluation.model, "evaluation.sampling", evaluation.sampling
    if data is not None and data.source is not None:
        yield "data.translation.model", data.translation.model, "data.translation.sampling", data.translation.sampling
        if data.translation.judge is not None:
            yield ("data.translation.judge", data.translation.judge, "data.translation.judge_sampling",
                   data.translation.judge_sampling)
        yield "data.traces.model", data.traces.model, "data.traces.sampling", data.traces.sampling
    if data is not None and data.rejection is not None:
        policy = data.rejection.policy or (profile.sft.model if profile.sft else None)
        key = "data.rejection.policy" if data.rejection.policy else "sft.model"
        if policy is not None:
            yield key, policy, "data.rejection.sampling", data.rejection.sampling
    if grpo is not None:
        model = grpo.model or (profile.sft.model if profile.sft else None)
        key = "grpo.model" if grpo.model else "sft.model"
        if model is not None:
            yield key, model, "grpo.sampling", grpo.sampling
            if grpo.validation.enabled:
                yield key, model, "grpo.validation.sampling", grpo.validation.sampling


def length_problems(profile: Any) -> list[str]:
    """Every vLLM generation whose ``max_new_tokens`` leaves no room for a prompt in its ``max_model_len``."""
    problems = []
    for model_key, model, sampling_key, sampling in generations(profile):
        limit = model.max_model_len
        if model.backend in VLLM_BACKENDS and limit is not None and sampling.max_new_tokens >= limit:
            problems.append(f"{sampling_key}.max_new_tokens {sampling.max_new_tokens} with {model_key}.max_model_len "
                            f"{limit}: vLLM fits prompt and completion into max_model_len tokens, so no prompt "
                            "leaves room for that many new tokens; lower max_new_tokens or raise max_model_len")
    return list(dict.fromkeys(problems))
