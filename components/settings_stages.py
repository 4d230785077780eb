"""Stage sections of a profile: audit (issue 4), data and SFT (issue 5), GRPO (issue 6).

Each stage owns its section; field names are explicit (no ``**kwargs``), so a
misspelled key fails at load. Re-exported by ``components.config``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from components.settings_shared import ModelSettings, PromptSettings, SamplingSettings, StrictSettings


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
