"""Settings shared by every stage: the strict base class, models, sampling, prompts, benchmarks, scoring.

Every section rejects unknown keys (pydantic ``extra="forbid"``, as lighteval's
``ModelConfig`` does) and is frozen. Loading, overrides and fingerprints live in
``components.config``, which re-exports these classes.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class ProfileError(ValueError):
    """A profile that cannot be loaded; the message names the file and every bad key."""


class StrictSettings(BaseModel):
    """Base of every section: unknown keys are errors, instances are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# ---------------------------------------------------------------- shared sections


class TrackingSettings(StrictSettings):
    """Where MLflow writes. ``None`` means ``sqlite:///<project>/mlruns/mlflow.db``."""

    tracking_uri: str | None = None
    artifact_root: str | None = None
    experiment: str = "polyreason"


class ModelSettings(StrictSettings):
    """A generator: backend name (see ``components.generation.BACKENDS``) and model.

    ``model`` is a local directory, a hub id, or ``embedded:gemma3-270m`` (the
    PyPI-shipped Gemma-3-270M GGUF, converted once to safetensors).
    """

    backend: str = "transformers"
    model: str = "embedded:gemma3-270m"
    gguf_file: str | None = None
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = "auto"
    chat: bool = False
    thinking: bool = False
    device: Literal["auto", "cpu", "cuda"] = "auto"
    base_url: str | None = None
    api_key_env: str | None = None
    max_concurrency: int = Field(default=4, ge=1)
    max_retries: int = Field(default=5, ge=0)
    gpu_memory_utilization: float = Field(default=0.85, gt=0, le=1)
    max_model_len: int | None = None


class SamplingSettings(StrictSettings):
    """Decoding parameters; ``temperature == 0`` means greedy."""

    n: int = Field(default=1, ge=1)
    temperature: float = Field(default=0.0, ge=0)
    top_p: float = Field(default=1.0, gt=0, le=1)
    max_new_tokens: int = Field(default=256, ge=1)
    seed: int = 0
    batch_size: int = Field(default=8, ge=1)


class PromptSettings(StrictSettings):
    """How a question becomes a prompt (see ``components.data.prompts``).

    ``style``: ``plain`` (question only), ``instruction`` (language-specific
    instruction, "prompt control"), ``prefix`` (instruction plus a
    query-language opener after the think tag), ``few_shot`` (MGSM native
    exemplars, for base models).
    """

    style: Literal["plain", "instruction", "prefix", "few_shot"] = "instruction"
    num_shots: int = Field(default=0, ge=0, le=8)
    exemplars_path: str | None = None


class BenchmarkSettings(StrictSettings):
    """One benchmark: registry name, optional local directory, languages, limit."""

    name: str
    data_dir: str | None = None
    languages: list[str] = Field(default_factory=list)
    limit: int | None = Field(default=None, ge=1)
    selection: Literal["first", "sample"] = "first"
    sample_seed: int = 0


class ScoringSettings(StrictSettings):
    """Scoring rules: verifier name, LCPR rule, SLC threshold, TTC context."""

    verifier: str = "trusted"
    lcpr_rule: Literal["adamame", "lcb"] = "adamame"
    slc_threshold: float = Field(default=0.9, ge=0, le=1)
    max_context: int = Field(default=8192, ge=1)
    pass_k: list[int] = Field(default_factory=lambda: [1])
    words_path: str | None = None
    in_domain: list[str] = Field(default_factory=lambda: ["fr", "pt", "ja", "ko", "th"])


class EvaluationSettings(StrictSettings):
    """The evaluation stage (issue 3)."""

    model: ModelSettings = Field(default_factory=ModelSettings)
    sampling: SamplingSettings = Field(default_factory=SamplingSettings)
    prompt: PromptSettings = Field(default_factory=PromptSettings)
    benchmarks: list[BenchmarkSettings] = Field(default_factory=list)
    scoring: ScoringSettings = Field(default_factory=ScoringSettings)
