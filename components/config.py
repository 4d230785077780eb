"""Typed, frozen profile settings: one YAML profile -> one validated ``Profile``.

House rules (ARCHITECTURE.md, habit 4): every section rejects unknown keys
(pydantic ``extra="forbid"``, as lighteval's ``ModelConfig`` does), dotted
``key=value`` overrides are applied before validation, every error is reported
at once, and section classes end in ``Settings`` so they never shadow trl's
``SFTConfig``/``GRPOConfig``. ``fingerprint`` gives a stable content hash used
in cache keys.

>>> p = load_profile_dict({"name": "t"}, ["evaluation.sampling.n=2"])
>>> p.evaluation.sampling.n
2
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator, model_validator


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


# ---------------------------------------------------------------- stage sections
# Each stage owns its section below; keep field names explicit (no **kwargs).


class AuditSettings(StrictSettings):
    """The reward-audit stage (issue 4; ``components.audit``).

    ``generations``: a JSONL/parquet file of generation rows to audit; ``None``
    runs the evaluation stage of the same profile for fresh generations.
    ``number_only_generations``: rows of the answer-interface probe; ``None``
    with ``probe`` on generates them from the same prompts rewritten by
    ``components.audit.probe.number_only_prompt`` (evaluation model and sampling).
    ``proxies`` are audited against ``reference``; the guard checks
    ``guard_verifier`` (VLB of ``guard_metric``: warn above ``warn_vlb``, fail
    above ``fail_vlb``; the GRPO stage raises there, the audit only reports).
    ``stress_golds``/``stress_table``: ``None`` = the packaged table and its golds.
    """

    generations: str | None = None
    number_only_generations: str | None = None
    probe: bool = True
    selection: bool = True
    reference: str = "trusted"
    proxies: list[str] = Field(default_factory=lambda: ["exact", "numeric", "math_verify", "hybrid"])
    stress_languages: list[str] = Field(default_factory=lambda: ["en", "ja", "zh", "fr", "de", "th"])
    stress_golds: list[str] | None = None
    stress_table: str | None = None
    guard_verifier: str = "exact"
    guard_metric: Literal["fnr", "fpr", "err"] = "err"
    warn_vlb: float = Field(default=0.1, ge=0, le=1)
    fail_vlb: float = Field(default=0.3, ge=0, le=1)

    @model_validator(mode="after")
    def _thresholds_ordered(self) -> "AuditSettings":
        if self.warn_vlb > self.fail_vlb:
            raise ValueError(f"warn_vlb ({self.warn_vlb}) must not exceed fail_vlb ({self.fail_vlb})")
        return self


class DataSourceSettings(StrictSettings):
    """English source problems with gold answers (AdaMame §3.1 "Queries").

    Exactly one of ``hub`` (a Hugging Face dataset name, e.g.
    ``open-r1/DAPO-Math-17k-Processed``; needs the network) or ``path`` (a local
    JSONL/JSON/parquet/TSV/CSV file, relative to the project directory). Columns
    are mapped by name; ``answer_regex`` extracts the gold from a longer answer
    field (its first group, e.g. ``"####\\s*(.+)$"`` for GSM8K). ``benchmark``
    names the evaluation benchmark the source is drawn from, so a profile that
    also evaluates on it is refused. ``reference_path`` is a per-language file of
    reference translations aligned row by row (``{lang}``: ISO code,
    ``{language}``: English name), as MSVAMP ships them.
    """

    name: str = "source"
    hub: str | None = None
    hub_config: str | None = None
    split: str = "train"
    path: str | None = None
    format: Literal["auto", "jsonl", "json", "parquet", "tsv", "csv"] = "auto"
    question_column: str = "question"
    answer_column: str = "answer"
    id_column: str | None = None
    answer_regex: str | None = None
    benchmark: str | None = None
    limit: int | None = Field(default=None, ge=1)
    reference_path: str | None = None
    reference_column: str = "m_query"

    @model_validator(mode="after")
    def _one_origin(self) -> "DataSourceSettings":
        if (self.hub is None) == (self.path is None):
            raise ValueError("give exactly one of source.hub or source.path")
        return self


class TranslationSettings(StrictSettings):
    """LLM translation of each source query into every target language, with gates.

    ``judge`` (optional) scores each translation 1-5 (AdaMame verified with a
    second model); below ``judge_min_score`` the translation is rejected.
    """

    model: ModelSettings = Field(default_factory=ModelSettings)
    sampling: SamplingSettings = Field(default_factory=lambda: SamplingSettings(max_new_tokens=512))
    judge: ModelSettings | None = None
    judge_sampling: SamplingSettings = Field(default_factory=lambda: SamplingSettings(max_new_tokens=8))
    judge_min_score: int = Field(default=4, ge=1, le=5)


class TraceSettings(StrictSettings):
    """Teacher reasoning traces and their filter (AdaMame §3.1, appendix C.1)."""

    model: ModelSettings = Field(default_factory=ModelSettings)
    sampling: SamplingSettings = Field(
        default_factory=lambda: SamplingSettings(temperature=1.0, max_new_tokens=2048)
    )
    prompt: PromptSettings = Field(default_factory=PromptSettings)
    verifier: str = "trusted"
    lcpr_rule: Literal["adamame", "lcb"] = "adamame"
    words_path: str | None = None
    per_language: int | None = Field(default=None, ge=1)
    seed: int = 0


class RejectionSettings(StrictSettings):
    """RL-set selection over the SFT set (AdaMame §3.3, appendix B.5, table 8).

    ``strategy``: ``zero_one_filter`` (k rollouts, keep 0 < correct < k),
    ``random`` (no rollouts) or ``conditional`` (one rollout, keep it if it is in
    the query language and wrong). ``policy`` ``None`` means the merged SFT model.
    """

    strategy: str = "zero_one_filter"
    k: int = Field(default=8, ge=1)
    policy: ModelSettings | None = None
    sampling: SamplingSettings = Field(
        default_factory=lambda: SamplingSettings(temperature=0.6, top_p=0.95, max_new_tokens=2048)
    )
    prompt: PromptSettings = Field(default_factory=PromptSettings)
    per_language: int | None = Field(default=1000, ge=1)
    validation_per_language: int = Field(default=200, ge=0)
    seed: int = 0


class DataSettings(StrictSettings):
    """The data-construction stage (issue 5): source -> translation -> traces (-> rejection)."""

    source: DataSourceSettings
    languages: list[str] = Field(min_length=1)
    source_language: str = "en"
    translation: TranslationSettings = Field(default_factory=TranslationSettings)
    traces: TraceSettings = Field(default_factory=TraceSettings)
    rejection: RejectionSettings | None = None


class SFTSettings(StrictSettings):
    """The LoRA SFT stage (issue 5); defaults from AdaMame §3.2 / appendix B.2.

    ``template``: ``chat`` (the tokenizer's chat template) or ``plain``
    (``prompt + completion``, for base models). ``accelerate_config`` names a
    file in ``profiles/accelerate/`` (``cpu``, ``single-gpu``, ``multi-gpu-zero2``).
    ``bf16`` ``None`` keeps trl's default (on).
    """

    model: ModelSettings = Field(default_factory=ModelSettings)
    template: Literal["chat", "plain"] = "chat"
    max_length: int = Field(default=1024, ge=8)
    lora_r: int = Field(default=8, ge=1)
    lora_alpha: int = Field(default=16, ge=1)
    lora_dropout: float = Field(default=0.05, ge=0, lt=1)
    target_modules: str | list[str] = "all-linear"
    learning_rate: float = Field(default=2e-4, gt=0)
    lr_scheduler: str = "cosine"
    warmup_ratio: float = Field(default=0.1, ge=0, lt=1)
    epochs: float = Field(default=1.0, gt=0)
    max_steps: int = -1
    per_device_batch_size: int = Field(default=2, ge=1)
    gradient_accumulation_steps: int = Field(default=1, ge=1)
    gradient_checkpointing: bool = True
    bf16: bool | None = None
    logging_steps: int = Field(default=1, ge=1)
    save_steps: int = Field(default=50, ge=1)
    save_total_limit: int = Field(default=2, ge=1)
    seed: int = 0
    merge: bool = False
    accelerate_config: str = "cpu"
    timeout_s: int = Field(default=24 * 3600, ge=1)


class GRPOStageSettings(StrictSettings):
    """The curriculum GRPO stage (issue 6): trl ``GRPOTrainer`` + LoRA with registry rewards.

    ``model``/``adapter``/``dataset`` default to the outputs of the earlier stages
    (the flow passes them); set them to run the stage alone. ``rewards`` name
    entries of ``components.rewards.REWARDS`` with their keyword parameters
    (checked at load). Batch sizes follow trl: ``per_device_train_batch_size``
    counts completions, ``generation_batch_size`` (optional) the completions
    generated at once. ``loss_type``/``scale_rewards``/``beta`` go to
    ``GRPOConfig`` unchanged (AdaMame: ``dr_grpo`` with ``scale_rewards="none"``
    for the paper's text, ``"group"`` for its released code).
    """

    class Reward(StrictSettings):
        """One reward: registry name, weight in trl's weighted sum, factory keyword parameters."""

        name: str = "accuracy"
        weight: float = 1.0
        params: dict[str, Any] = Field(default_factory=dict)

    class Lora(StrictSettings):
        """peft ``LoraConfig`` (AdaMame: r 8, alpha 16, all linear modules)."""

        r: int = Field(default=8, ge=1)
        alpha: int = Field(default=16, ge=1)
        dropout: float = Field(default=0.0, ge=0, lt=1)
        target_modules: str | list[str] = "all-linear"

    class KLReset(StrictSettings):
        """PCS: the reference becomes the current policy when the logged KL exceeds ``threshold``."""

        enabled: bool = False
        threshold: float = Field(default=0.2, gt=0)

    class RewardAudit(StrictSettings):
        """Reward-audit guard before training: VLB of the reward verifier against ``trusted``."""

        enabled: bool = True
        rollouts: str | None = None  # JSONL/parquet (id, lang, completion[, gold]); None: sample the policy
        sample_size: int = Field(default=32, ge=1)  # prompts (or rollout rows when ``rollouts`` is set)
        num_generations: int = Field(default=2, ge=1)
        warn_vlb: float = Field(default=0.1, ge=0)
        fail_vlb: float = Field(default=0.3, ge=0)
        metric: Literal["err", "fnr", "fpr"] = "err"

    model: str | None = None
    adapter: str | None = None
    dataset: str | None = None  # JSONL/parquet: prompt or question, gold, lang (id optional)
    question_column: str = "question"
    gold_column: str = "gold"
    dataset_lang: str | None = None  # language of every row, for files without a ``lang`` column
    dataset_limit: int | None = Field(default=None, ge=1)
    prompt: PromptSettings = Field(default_factory=PromptSettings)  # for rows without a ``prompt``
    chat: bool | None = None  # None: use the chat template when the tokenizer has one
    thinking: bool = False
    rewards: list[Reward] = Field(default_factory=lambda: [GRPOStageSettings.Reward()])
    lora: Lora = Field(default_factory=lambda: GRPOStageSettings.Lora())
    kl_reset: KLReset = Field(default_factory=lambda: GRPOStageSettings.KLReset())
    audit: RewardAudit = Field(default_factory=lambda: GRPOStageSettings.RewardAudit())
    loss_type: Literal["grpo", "dr_grpo", "dapo", "bnpo"] = "dr_grpo"
    scale_rewards: Literal["group", "batch", "none"] = "group"
    beta: float = Field(default=0.001, ge=0)
    epsilon: float = Field(default=0.2, gt=0)
    num_iterations: int = Field(default=1, ge=1)
    learning_rate: float = Field(default=1e-5, gt=0)
    lr_scheduler_type: str = "constant"
    warmup_ratio: float = Field(default=0.0, ge=0, lt=1)
    num_train_epochs: float = Field(default=1.0, gt=0)
    max_steps: int = -1
    per_device_train_batch_size: int = Field(default=8, ge=1)
    gradient_accumulation_steps: int = Field(default=1, ge=1)
    generation_batch_size: int | None = Field(default=None, ge=1)
    num_generations: int = Field(default=8, ge=2)
    max_completion_length: int = Field(default=4096, ge=1)
    temperature: float = Field(default=0.8, gt=0)
    top_p: float = Field(default=1.0, gt=0, le=1)
    use_vllm: bool = False
    vllm_mode: Literal["colocate", "server"] = "colocate"
    vllm_gpu_memory_utilization: float = Field(default=0.3, gt=0, le=1)
    vllm_server_base_url: str | None = None
    device: Literal["auto", "cpu", "cuda"] = "auto"
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = "auto"
    gradient_checkpointing: bool = False
    logging_steps: int = Field(default=1, ge=1)
    save_steps: int = Field(default=50, ge=1)
    save_total_limit: int | None = Field(default=None, ge=1)
    resume: bool = True
    seed: int = 0
    accelerate_config: str | None = "cpu"  # profiles/accelerate/<name>.yaml or a path; None: plain python
    cpu_threads: int | None = Field(default=None, ge=1)  # torch threads per process (CPU); None: accelerate's
    timeout_s: int = Field(default=7 * 24 * 3600, ge=1)

    @field_validator("rewards")
    @classmethod
    def _some_reward(cls, value: list) -> list:
        if not value:
            raise ValueError("at least one reward is needed")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> "GRPOStageSettings":
        if self.kl_reset.enabled and self.beta == 0:
            raise ValueError("kl_reset needs a KL term: set beta > 0 (PCS: 0.001)")
        if self.audit.warn_vlb > self.audit.fail_vlb:
            raise ValueError("audit.warn_vlb must not exceed audit.fail_vlb")
        return self


class Profile(StrictSettings):
    """A whole experiment. Stages that are ``None`` are not run."""

    name: str
    project_dir: str | None = None
    tracking: TrackingSettings = Field(default_factory=TrackingSettings)
    evaluation: EvaluationSettings | None = None
    audit: AuditSettings | None = None
    data: DataSettings | None = None
    sft: SFTSettings | None = None
    grpo: GRPOStageSettings | None = None

    @field_validator("name")
    @classmethod
    def _name_is_simple(cls, value: str) -> str:
        if not value or any(c in value for c in "/\\ "):
            raise ValueError("name must be non-empty, without spaces or slashes")
        return value


# ---------------------------------------------------------------- loading


def parse_override(text: str) -> tuple[list[str], Any]:
    """Split ``a.b.c=value`` into a key path and a YAML-parsed value.

    >>> parse_override("evaluation.sampling.n=4")
    (['evaluation', 'sampling', 'n'], 4)
    """
    if "=" not in text:
        raise ProfileError(f"override {text!r} is not key=value")
    key, raw = text.split("=", 1)
    path = [part for part in key.strip().split(".") if part]
    if not path:
        raise ProfileError(f"override {text!r} has an empty key")
    return path, yaml.safe_load(raw) if raw.strip() else None


def apply_override(data: dict, path: list[str], value: Any) -> None:
    """Set ``value`` at ``path`` in nested dicts/lists (list indices are integers)."""
    node: Any = data
    for depth, part in enumerate(path[:-1]):
        nxt = path[depth + 1]
        if isinstance(node, list):
            node = node[int(part)]
            continue
        if node.get(part) is None:
            node[part] = [] if nxt.isdigit() else {}
        node = node[part]
    last = path[-1]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value


def _format_errors(source: str, error: ValidationError) -> str:
    lines = [f"{source}: {error.error_count()} invalid setting(s)"]
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"])
        lines.append(f"  - {where}: {item['msg']}")
    return "\n".join(lines)


def load_profile_dict(data: dict, overrides: list[str] | None = None, source: str = "<dict>") -> Profile:
    """Validate a profile mapping after applying dotted overrides."""
    data = json.loads(json.dumps(data))  # deep copy, plain types only
    for text in overrides or []:
        path, value = parse_override(text)
        apply_override(data, path, value)
    try:
        profile = Profile.model_validate(data)
    except ValidationError as error:
        raise ProfileError(_format_errors(source, error)) from None
    check_registries(profile, source)
    return profile


def load_profile(path: str | Path, overrides: list[str] | None = None) -> Profile:
    """Read a YAML profile, apply ``key=value`` overrides, validate everything."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise ProfileError(f"{path}: no such profile") from None
    except yaml.YAMLError as error:
        raise ProfileError(f"{path}: not valid YAML: {error}") from None
    if not isinstance(data, dict):
        raise ProfileError(f"{path}: a profile must be a mapping at the top level")
    data.setdefault("name", path.stem)
    return load_profile_dict(data, overrides, source=str(path))


def check_registries(profile: Profile, source: str) -> None:
    """Check every registry name the profile uses; report all unknown names at once."""
    from components.registry_checks import registry_problems

    problems = registry_problems(profile)
    if problems:
        header = f"{source}: {len(problems)} profile problem(s) (registry names, cross-section checks)"
        raise ProfileError("\n".join([header] + [f"  - {p}" for p in problems]))


def fingerprint(value: Any) -> str:
    """Stable sha256 of a settings object, dict or list (key order does not matter).

    >>> fingerprint({"a": 1, "b": 2}) == fingerprint({"b": 2, "a": 1})
    True
    """
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    payload = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Flatten nested settings to dotted keys, for MLflow params.

    >>> flatten({"a": {"b": 1, "c": [2, 3]}})
    {'a.b': 1, 'a.c': '[2, 3]'}
    """
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    out: dict[str, Any] = {}
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, dict):
            out.update(flatten(item, f"{name}."))
        elif isinstance(item, list):
            out[name] = json.dumps(item, ensure_ascii=False, default=str)
        else:
            out[name] = item
    return out
