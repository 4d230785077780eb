"""The trainer sections: LoRA SFT (trl ``SFTTrainer``) and curriculum GRPO (trl ``GRPOTrainer``).

Both use trl's own field names for what goes to trl (``learning_rate``,
``lr_scheduler_type``, ``num_train_epochs``, ``per_device_train_batch_size`` …),
a shared ``LoraSettings`` and a ``ModelSettings`` for the model (its ``dtype`` and
``device`` decide precision: ``auto`` trains in bfloat16 on CUDA, float32 on
CPU). GRPO samples, so it also has a ``SamplingSettings``: ``n`` is trl's
``num_generations``, ``max_new_tokens`` its ``max_completion_length``,
``temperature``/``top_p`` as named and ``seed`` the trainer's seed; the size of a
generation batch is trl's ``generation_batch_size`` (completions; ``None``: one
generation per optimizer step), so ``sampling.batch_size`` is refused there. GRPO generates with trl's vLLM integration
when ``model.backend`` is ``vllm`` (``model.gpu_memory_utilization`` is then
trl's ``vllm_gpu_memory_utilization``).

AdaMame's defaults (§3.2, appendix B.2): LoRA r 8, alpha 16, all linear modules;
SFT lr 2e-4, cosine, warm-up ratio 0.1; GRPO lr 1e-5, KL 0.001, Dr.GRPO.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from components.settings.base import ProjectPath, StrictSettings, VerifierName, changed_fields, check_registered
from components.settings.lcrl import CouplingSettings, LcRLSettings, lcrl_problems
from components.settings.shared import LoraSettings, ModelSettings, PromptSettings, SamplingSettings

TRAINER_OPERATIONAL = {
    "timeout_s": "how long the task waits for the trainer process, not what it trains",
    "cpu_threads": "torch threads per process: the same numbers, computed faster or slower",
    "resume": "whether a killed run continues from its last checkpoint, not what is trained",
}
GRPO_BACKENDS = ("transformers", "vllm")


class SFTSettings(StrictSettings):
    """The LoRA SFT stage.

    ``template``: ``chat`` (the tokenizer's chat template) or ``plain``
    (``prompt + completion``, for base models). ``accelerate_config`` names a
    file in ``profiles/accelerate/`` (``cpu``, ``single-gpu``, ``multi-gpu-zero2``)
    or a path; ``None`` runs plain ``python -m`` (one process). ``merge`` also
    saves the base model with the adapter merged in.
    """

    OPERATIONAL = TRAINER_OPERATIONAL

    model: ModelSettings = Field(default_factory=ModelSettings)
    template: Literal["chat", "plain"] = "chat"
    max_length: int = Field(default=1024, ge=8)
    lora: LoraSettings = Field(default_factory=lambda: LoraSettings(dropout=0.05))
    learning_rate: float = Field(default=2e-4, gt=0)
    lr_scheduler_type: str = "cosine"
    warmup_ratio: float = Field(default=0.1, ge=0, lt=1)
    num_train_epochs: float = Field(default=1.0, gt=0)
    max_steps: int = -1
    per_device_train_batch_size: int = Field(default=2, ge=1)
    gradient_accumulation_steps: int = Field(default=1, ge=1)
    gradient_checkpointing: bool = True
    logging_steps: int = Field(default=1, ge=1)
    save_steps: int = Field(default=50, ge=1)
    save_total_limit: int | None = Field(default=2, ge=1)
    seed: int = 0
    merge: bool = False
    resume: bool = True
    accelerate_config: str | None = "cpu"
    cpu_threads: int | None = Field(default=None, ge=1)
    timeout_s: int = Field(default=24 * 3600, ge=1)

    @field_validator("model")
    @classmethod
    def _local_model(cls, value: ModelSettings) -> ModelSettings:
        return _trainable(value, "sft.model")


class RewardSettings(StrictSettings):
    """One reward: registry name, weight in trl's weighted sum, the factory's keyword parameters.

    A ``judge`` parameter (the model a reward asks, M-Thinker's) holds ``ModelSettings`` fields and is
    checked as such when the profile loads.
    """

    name: str = "accuracy"
    weight: float = 1.0
    params: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _registered(self) -> "RewardSettings":
        import importlib

        rewards = importlib.import_module("components.rewards")  # looked up when validated; see settings.base
        problems = rewards.reward_parameter_problems(self.name, self.params)
        verifier = self.params.get("verifier")
        if isinstance(verifier, str):
            try:
                check_registered("verifier", verifier)
            except ValueError as error:
                problems.append(f"params.verifier: {error}")
        judge = self.params.get("judge")
        if judge is not None:  # a judge model (M-Thinker) is a model section: checked like one
            try:
                ModelSettings.model_validate(judge)
            except ValidationError as error:
                problems += [f"params.judge.{'.'.join(map(str, e['loc']))}: {e['msg']}".replace(".: ", ": ")
                             for e in error.errors()]
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def verifier(self) -> str:
        """The verifier this reward judges answers with (the factories' default is ``trusted``)."""
        return str(self.params.get("verifier", "trusted"))


class KLResetSettings(StrictSettings):
    """PCS: the reference becomes the current policy when the logged KL exceeds ``threshold``."""

    enabled: bool = False
    threshold: float = Field(default=0.2, gt=0)


class RewardAuditSettings(StrictSettings):
    """The audit before training: VLB of a reward's verifier against ``reference`` on policy rollouts.

    ``verifier`` ``None`` audits every reward's verifier that is not the reference;
    when every reward already judges with the reference there is nothing to audit,
    and the run says so. ``rollouts``: a JSONL/parquet file (``id, lang,
    completion[, gold]``), else ``num_generations`` samples of the policy for
    ``sample_size`` prompts.
    """

    enabled: bool = True
    verifier: VerifierName | None = None
    reference: VerifierName = "trusted"
    rollouts: ProjectPath | None = None
    sample_size: int = Field(default=32, ge=1)
    num_generations: int = Field(default=2, ge=1)
    warn_vlb: float = Field(default=0.1, ge=0)
    fail_vlb: float = Field(default=0.3, ge=0)
    metric: Literal["err", "fnr", "fpr"] = "err"

    @model_validator(mode="after")
    def _thresholds_ordered(self) -> "RewardAuditSettings":
        if self.warn_vlb > self.fail_vlb:
            raise ValueError(f"warn_vlb ({self.warn_vlb}) must not exceed fail_vlb ({self.fail_vlb})")
        return self


class GRPOValidationSettings(StrictSettings):
    """Validation curves during GRPO (AdaMame figure 3: validation accuracy and reasoning-language rate on a
    held-out set every two training batches).

    Every ``every_n_steps`` optimizer steps (and before the first when
    ``before_training``, as verl's ``val_before_train``) the policy answers the
    validation set (``dataset``; ``None``: ``rl_validation.parquet`` beside the
    training set, which the data stage holds out) with ``sampling`` (greedy by
    default), rendered like the training prompts; per-language accuracy (by
    ``verifier`` on the answer ``extraction`` finds), LCPR and response length go to the
    run's step curves.
    ``limit_per_language`` caps the rows per language.
    """

    enabled: bool = False
    every_n_steps: int = Field(default=2, ge=1)
    before_training: bool = True
    dataset: ProjectPath | None = None
    limit_per_language: int | None = Field(default=None, ge=1)
    sampling: SamplingSettings = Field(
        default_factory=lambda: SamplingSettings(n=1, temperature=0.0, max_new_tokens=1024, batch_size=16)
    )
    verifier: VerifierName = "trusted"
    extraction: Literal["strict", "lenient"] = "strict"

    @model_validator(mode="after")
    def _only_when_enabled(self) -> "GRPOValidationSettings":
        if not self.enabled and changed_fields(self, [n for n in type(self).model_fields if n != "enabled"]):
            raise ValueError("validation settings are read only when validation.enabled is true")
        return self


class GRPOStageSettings(StrictSettings):
    """The curriculum GRPO stage: trl ``GRPOTrainer`` + LoRA with registry rewards.

    ``model`` (base weights plus an optional SFT ``adapter``, merged in before a
    fresh adapter is trained) and ``dataset`` default to the outputs of the
    earlier stages of a recipe; set them to run the stage alone. The dataset
    (JSONL/parquet) holds a ``prompt`` or a question column, a gold column and
    ``lang`` (or ``dataset_lang`` for a one-language file). ``loss_type``,
    ``scale_rewards``, ``beta`` … go to ``GRPOConfig`` unchanged (AdaMame:
    ``dr_grpo`` with ``scale_rewards: none`` for the paper's text, ``group`` for
    its released code).
    """

    OPERATIONAL = TRAINER_OPERATIONAL

    model: ModelSettings | None = None
    dataset: ProjectPath | None = None
    question_column: str = "question"
    gold_column: str = "gold"
    dataset_lang: str | None = None
    dataset_limit: int | None = Field(default=None, ge=1)
    prompt: PromptSettings = Field(default_factory=PromptSettings)
    sampling: SamplingSettings = Field(
        default_factory=lambda: SamplingSettings(n=8, temperature=0.8, max_new_tokens=4096)
    )
    rewards: list[RewardSettings] = Field(default_factory=lambda: [RewardSettings()], min_length=1)
    lora: LoraSettings = Field(default_factory=LoraSettings)
    kl_reset: KLResetSettings = Field(default_factory=KLResetSettings)
    audit: RewardAuditSettings = Field(default_factory=RewardAuditSettings)
    validation: GRPOValidationSettings = Field(default_factory=GRPOValidationSettings)
    coupling: CouplingSettings = Field(default_factory=CouplingSettings)  # LcRL language-coupled groups
    lcrl: LcRLSettings | None = None  # LcRL search tool loop (components.settings.lcrl); None: plain rollouts
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
    vllm_mode: Literal["colocate", "server"] = "colocate"
    vllm_server_base_url: str | None = None
    gradient_checkpointing: bool = False
    logging_steps: int = Field(default=1, ge=1)
    save_steps: int = Field(default=50, ge=1)
    save_total_limit: int | None = Field(default=None, ge=1)
    resume: bool = True
    accelerate_config: str | None = "cpu"
    cpu_threads: int | None = Field(default=None, ge=1)
    timeout_s: int = Field(default=7 * 24 * 3600, ge=1)

    @field_validator("model")
    @classmethod
    def _generating_model(cls, value: ModelSettings | None) -> ModelSettings | None:
        return None if value is None else _trainable(value, "grpo.model")

    @model_validator(mode="after")
    def _consistent(self) -> "GRPOStageSettings":
        sampling = self.sampling
        if sampling.n < 2 or sampling.temperature <= 0:
            raise ValueError(f"GRPO compares several sampled completions per prompt: sampling.n must be at least 2 "
                             f"and sampling.temperature above 0 (got n={sampling.n}, temperature={sampling.temperature})")
        if changed_fields(sampling, ("batch_size",)):
            raise ValueError("sampling.batch_size is not read by GRPO: its generation batch is generation_batch_size "
                             "(completions; unset = one generation per optimizer step)")
        batch = self.generation_batch_size or self.per_device_train_batch_size * self.gradient_accumulation_steps
        if batch % sampling.n or batch % self.per_device_train_batch_size:
            raise ValueError(f"a generation batch of {batch} completions must be a multiple of sampling.n "
                             f"({sampling.n}) and of per_device_train_batch_size ({self.per_device_train_batch_size})")
        if lcrl_problems(self):
            raise ValueError("; ".join(lcrl_problems(self)))
        if self.kl_reset.enabled and self.beta == 0:
            raise ValueError("kl_reset needs a KL term: set beta > 0 (PCS: 0.001)")
        uses_vllm = self.model is not None and self.model.backend == "vllm"
        if not uses_vllm and changed_fields(self, ("vllm_mode", "vllm_server_base_url")):
            raise ValueError("vllm_mode/vllm_server_base_url are read only when model.backend is vllm")
        return self

    def audited_verifiers(self) -> list[str]:
        """Verifiers the pre-training audit checks: the configured one, else every reward's that is not the reference."""
        if self.audit.verifier is not None:
            return [self.audit.verifier]
        return sorted({reward.verifier for reward in self.rewards} - {self.audit.reference})


def _trainable(model: ModelSettings, where: str) -> ModelSettings:
    if model.backend not in GRPO_BACKENDS and where == "grpo.model":
        raise ValueError(f"{where}.backend must be one of {', '.join(GRPO_BACKENDS)} (trl generates with "
                         f"transformers, or with vLLM inside the trainer), got {model.backend!r}")
    if model.backend == "openai":
        raise ValueError(f"{where}: an API model cannot be trained; give local weights (a directory or hub id)")
    return model
