"""What stages hand each other: typed references (paths + fingerprints), never dicts to dig through.

Each stage flow returns one of these and takes the earlier stages' outputs as
parameters; only the recipe knows the order. They are pydantic models, so a
stage started as a deployment (on another machine's work pool) receives them as
JSON and validates them like any other parameter.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from components.settings import ModelSettings
from tasks.caching import ArtifactRef


class Output(BaseModel):
    model_config = ConfigDict(frozen=True)


class ModelRef(Output):
    """A model to generate with: base weights (local path or hub id) + optional LoRA adapter, and its identity.

    ``tag`` names it in metric keys and tables (``base``, ``sft``, ``grpo``, or a
    registered name and version); ``fingerprint`` covers the settings, the weight
    files and the adapter's content; ``registered`` is the ``models:/NAME/VERSION``
    it was loaded from, if any.
    """

    tag: str
    model: ModelSettings
    fingerprint: str
    registered: str | None = None


class DataOutputs(Output):
    """The SFT set (kept teacher traces) and the per-step reports."""

    sft_set: ArtifactRef
    report: dict
    run_id: str | None = None


class SFTOutputs(Output):
    """The SFT run directory (``result.json`` as summary), the base model and the trained adapter."""

    trained: ArtifactRef
    base: ModelRef
    adapter: str
    run_id: str | None = None


class RLOutputs(Output):
    """The RL set selected by sampling the policy, its held-out validation split and the rollouts."""

    rl_set: ArtifactRef
    validation: str
    rollouts: str
    run_id: str | None = None


class GRPOOutputs(Output):
    """The GRPO run directory and the final weights relative to the base.

    ``kind`` ``adapter``: one LoRA adapter on ``base`` (the SFT adapter and the
    GRPO adapter concatenated); ``merged``: a full model (after a KL-triggered
    reference reset the adapter alone misses the merged updates).
    """

    trained: ArtifactRef
    base: ModelRef
    weights: str
    kind: str
    audit: dict | None = None
    run_id: str | None = None


class BenchmarkOutput(Output):
    """One benchmark of one evaluation: generations, scores, rendered report, and whether it generated."""

    generations: ArtifactRef
    scores: ArtifactRef
    report: ArtifactRef
    generated: bool
    scored: bool
    load_errors: int = 0


class EvaluationOutputs(Output):
    """Every benchmark of one model's evaluation, and the run that logged it."""

    model: ModelRef
    benchmarks: dict[str, BenchmarkOutput]
    run_id: str | None = None
    pooled: list[dict] = []  # benchmarks generated together: names, prompts, backend seconds and wall times


class RecipeOutputs(Output):
    """A recipe run: its parent MLflow run, each stage's outputs, the comparison and the registered version."""

    run_id: str
    run_url: str
    evaluations: list[EvaluationOutputs]
    comparison: ArtifactRef | None = None
    audit: dict | None = None
    registered: dict | None = None
    data: DataOutputs | None = None
    sft: SFTOutputs | None = None
    rl: RLOutputs | None = None
    grpo: GRPOOutputs | None = None
