"""The cost of GRPO's validation curves (``grpo.validation``): how often, on how many prompts, by which generator.

A validation pass runs every ``every_n_steps`` optimizer steps (and once before the first
with ``before_training``), each pass answering every validation prompt ``sampling.n`` times
with up to ``sampling.max_new_tokens`` tokens. The prompts are the validation file's rows, or
the recipe's held-out split (``data.rejection.validation_per_language`` per language), capped
by ``limit_per_language``. The generator is trl's colocated vLLM engine when the stage
generates with one (``components.training.validation``), else transformers' ``generate`` on
the trained model, whose time the plan does not estimate (far slower than vLLM's).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from components.planning.rows import Rows


def validation_rows(profile: Any) -> Rows:
    """The validation prompts: the file's rows, or the held-out split's bound, capped per language."""
    settings, grpo = profile.grpo.validation, profile.grpo
    limit, languages = settings.limit_per_language, _languages(profile)
    if settings.dataset is not None:
        rows = _file_rows(Path(settings.dataset), limit)
    elif profile.data is not None and profile.data.rejection is not None:
        held = profile.data.rejection.validation_per_language
        per_language = held if limit is None else min(held, limit)
        rows = Rows(per_language * len(languages), True,
                    f"the held-out split: {per_language:,} per language × {len(languages)} languages")
    else:
        rows = Rows(None, True, f"rl_validation.parquet beside grpo.dataset {grpo.dataset}")
    return rows


def _languages(profile: Any) -> list[str]:
    return list(profile.data.languages) if profile.data is not None else []


def _file_rows(path: Path, limit: int | None) -> Rows:
    from components.training.grpo_data import load_rows
    from components.training.validation import limit_per_language

    if not path.is_file():
        return Rows(None, True, f"grpo.validation.dataset {path.name} is not there yet")
    try:
        return Rows(len(limit_per_language(load_rows(str(path)), limit)), False, f"grpo.validation.dataset {path.name}")
    except (OSError, ValueError, KeyError) as error:
        return Rows(None, True, f"grpo.validation.dataset: {error}")


def engine_generates(section: Any, model: Any) -> bool:
    """Whether validation generates with trl's colocated vLLM (``components.training.validation.uses_engine``)."""
    return (model.backend == "vllm" and section.trl_option("vllm_mode") == "colocate"
            and not section.trl_option("vllm_enable_sleep_mode"))


def validation_passes(section: Any, total_steps: int) -> int:
    """Passes over the validation set in ``total_steps`` optimizer steps."""
    settings = section.validation
    return total_steps // settings.every_n_steps + (1 if settings.before_training else 0)


def validation_tokens(profile: Any, total_steps: int) -> tuple[int, Rows, int | None, int | None]:
    """(passes, prompts, completions, tokens at most) of the run's validation."""
    section = profile.grpo
    passes, rows = validation_passes(section, total_steps), validation_rows(profile)
    if rows.count is None:
        return passes, rows, None, None
    completions = passes * rows.count * section.validation.sampling.n
    return passes, rows, completions, completions * section.validation.sampling.max_new_tokens
