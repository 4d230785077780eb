"""What stages hand each other: typed references (paths + fingerprints), never dicts to dig through.

Each stage flow returns one of these and takes the earlier stages' outputs as
parameters; only the recipe knows the order. They are pydantic models, so a
stage started as a deployment (on another machine's work pool) receives them as
JSON and validates them like any other parameter.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from components.settings import ModelSettings, SamplingSettings
from runtime.artifacts import ArtifactRef


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


class StepReport(Output):
    """One data step as logged: its main table, the step's summary figures, and each table's MLflow digest."""

    path: str
    summary: dict
    digests: dict[str, str] = {}


class DataOutputs(Output):
    """The SFT set (kept teacher traces) and the report of each step (``source``, ``translation``, ``traces``)."""

    sft_set: ArtifactRef
    report: dict[str, StepReport]
    run_id: str | None = None


class TrainedRun(Output):
    """A finished training run: its directory (``result.json`` as summary), its adapter, and its full model if any:
    the trained model of a full-parameter run (``lora: null``, no adapter), or the adapter merged into its base
    (a GRPO run after a KL-triggered reference reset, an SFT run with ``merge``)."""

    run: ArtifactRef
    adapter: str | None
    full_model: str | None = None

    @property
    def full(self) -> bool:
        """Whether every weight was trained (no adapter: the full model is the product)."""
        return self.adapter is None


class SFTOutputs(Output):
    """The SFT run, the base model and the trained adapter."""

    trained: TrainedRun
    base: ModelRef
    run_id: str | None = None
    model_id: str | None = None  # the adapter's MLflow logged model

    @property
    def adapter(self) -> str | None:
        return self.trained.adapter

    @property
    def kind(self) -> str:
        """``adapter`` (base + the LoRA adapter) or ``full`` (a full model: SFT with ``lora: null``)."""
        return "full" if self.trained.full else "adapter"

    @property
    def weights(self) -> str:
        """The adapter, or the full model's directory."""
        return self.trained.full_model if self.trained.full else self.trained.adapter


class RLOutputs(Output):
    """The RL set selected by sampling the policy, its held-out validation split and the rollouts."""

    rl_set: ArtifactRef
    validation: str
    rollouts: str
    run_id: str | None = None


class FinalWeights(Output):
    """The GRPO model relative to the original base: ``kind`` ``adapter`` (one LoRA adapter) or ``full``."""

    weights: str
    kind: str


class RewardAudit(Output):
    """The reward audit before GRPO: the worst status over the audited verifiers (``ok``/``warn``, or
    ``nothing-to-audit`` when every reward judges with the reference), and each verifier's VLB."""

    status: str
    reference: str
    verifiers: list[str] = []
    rows: int = 0
    vlb: dict[str, float | None] = {}  # None where a verifier had no rows to judge


class GRPOOutputs(Output):
    """The GRPO run directory and the final weights relative to the base.

    ``kind`` ``adapter``: one LoRA adapter on ``base`` (the SFT adapter and the
    GRPO adapter concatenated); ``full``: a full model (every weight trained, or
    after a KL-triggered reference reset the adapter merged in: the adapter alone
    misses the updates merged before it).
    """

    trained: TrainedRun
    base: ModelRef
    weights: str
    kind: str
    audit: RewardAudit | None = None
    run_id: str | None = None
    model_id: str | None = None  # the final weights' MLflow logged model


class LoadedBenchmark(Output):
    """A benchmark's items (as dicts) and the malformed rows that were skipped."""

    items: list[dict]
    errors: list[str] = []


class Prompts(Output):
    """Prompts in item order and the stop strings they need."""

    prompts: list[str]
    stop: list[str] = []


class PreparedBenchmark(Output):
    """A benchmark ready to generate: its items, load errors, prompts, stop strings and sampling settings."""

    name: str
    items: list[dict]
    errors: list[str]
    prompts: list[str]
    stop: list[str]
    sampling: SamplingSettings


class PooledGeneration(Output):
    """Benchmarks generated together in shared backend calls: how many prompts, the backend's time, when."""

    benchmarks: list[str]
    prompts_generated: int
    backend_seconds: float
    first_call_at: float | None = None
    last_return_at: float | None = None


class UnitFile(Output):
    """One generations file of a fanned-out task: a benchmark, or one ``language`` of it (a shard, whose prompts
    are the benchmark's prompts ``indices``); ``out`` is the benchmark's generations file."""

    benchmark: str
    items: list[dict]
    prompts: list[str]
    out: str
    language: str | None = None
    indices: list[int] | None = None


class UnitGroup(Output):
    """Files of a task generated with one sampling and one set of stop strings (they share backend calls)."""

    sampling: SamplingSettings
    stop: list[str] = []
    files: list[UnitFile]


class GenerationUnit(Output):
    """One task of a fanned-out evaluation: a model and the files it generates."""

    name: str
    model: ModelRef
    groups: list[UnitGroup]


class UnitResult(Output):
    """What a fanned-out task did: prompts generated, backend time, where (host, GPUs) and when (wall clock).

    ``skipped``: every file was finished by another run meanwhile.
    """

    name: str
    model: str
    prompts_generated: int = 0
    backend_seconds: float = 0.0
    started_at: float
    ended_at: float
    host: str
    gpus: str | None = None
    skipped: bool = False


LOAD_ERRORS_SHOWN = 10  # skipped rows a benchmark's output names (the terminal shows them)


class BenchmarkOutput(Output):
    """One benchmark of one evaluation: generations, scores, rendered report, and whether it generated."""

    generations: ArtifactRef
    scores: ArtifactRef
    report: ArtifactRef
    generated: bool
    scored: bool
    load_errors: int = 0  # rows of the benchmark's files skipped as unreadable
    load_error_lines: list[str] = []  # the first of them, FILE:LINE: field F: problem (all: the run's artifact)


class EvaluationOutputs(Output):
    """Every benchmark of one model's evaluation, and the run that logged it."""

    model: ModelRef
    benchmarks: dict[str, BenchmarkOutput]
    run_id: str | None = None
    pooled: list[PooledGeneration] = []  # benchmarks generated together
    model_id: str | None = None  # the MLflow logged model the metrics measure


class AuditOutputs(Output):
    """A reward audit: its run, the audited rows, and its figures (stress-suite summary, VLB and accuracy per
    verifier, the number-only probe, the selection report, the guard's verdict, the FNR chart)."""

    run_id: str
    tracking_uri: str
    generations: str
    number_only_generations: str | None = None
    metrics_logged: int = 0
    errors: list[dict] = []  # the first rows that could not be judged (all of them: ``errors_file``)
    errors_file: str | None = None
    stress: Any = None
    vlb: dict = {}
    accuracy: dict = {}
    probe: dict | None = None
    selection: dict | None = None
    guard: dict = {}
    figure: str


class ComparisonOutputs(Output):
    """A ``polyreason compare`` run: its MLflow run, the models side by side, the baseline, the table's text file
    and rows (JSON), and the paper comparison's text and rows when a paper table was given."""

    run_id: str
    run_url: str
    models: list[str]
    baseline: str
    table: str
    rows: str | None = None
    paper_table: str | None = None
    paper_rows: str | None = None


class RegisteredModel(Output):
    """A version in the MLflow model registry: ``uri`` is ``models:/NAME/VERSION``; ``reused`` when the alias moved
    to an existing version with the same weights; ``merged``: the merged copy registered beside it, if any."""

    name: str
    version: int
    alias: str
    uri: str
    model_id: str | None = None
    reused: bool = False
    merged: RegisteredModel | None = None


class RecipeOutputs(Output):
    """A recipe run: its parent MLflow run, each stage's outputs, the comparison (and the paper's table held
    against the run, when the profile has one) and the registered version."""

    run_id: str
    run_url: str
    evaluations: list[EvaluationOutputs]
    flow_run_id: str | None = None  # the recipe's Prefect flow run
    comparison: ArtifactRef | None = None
    audit: AuditOutputs | None = None
    registered: RegisteredModel | None = None
    data: DataOutputs | None = None
    sft: SFTOutputs | None = None
    rl: RLOutputs | None = None
    grpo: GRPOOutputs | None = None
    paper: ArtifactRef | None = None
