"""The trainer sections: LoRA SFT (trl ``SFTTrainer``) and curriculum GRPO (trl ``GRPOTrainer``).

Each section is polyreason's own fields plus trl's configuration
(``components.settings.trainer``): every key that is not a field here is a field
of trl's ``SFTConfig`` / ``GRPOConfig`` (``learning_rate``, ``lr_scheduler_type``,
``loss_type``, ``top_entropy_quantile`` …), checked by trl's config when the
profile loads. ``TRL_DEFAULTS`` fill the ones a profile leaves out.

Own fields: a ``ModelSettings`` for the model (its ``dtype`` and ``device``
decide precision: ``auto`` trains in bfloat16 on CUDA, float32 on CPU), a
``LoraSettings`` (``lora: null`` trains every weight of the model: full-parameter
fine-tuning, the papers' RL stages), ``warmup_ratio`` (transformers 5 spells it as a fractional
``warmup_steps``), how the trainer process is launched and resumed. GRPO samples,
so it also has a ``SamplingSettings``: ``n`` is trl's ``num_generations``,
``max_new_tokens`` its ``max_completion_length``, ``temperature``/``top_p`` as
named and ``seed`` the trainer's seed; the size of a generation batch is trl's
``generation_batch_size`` (completions; unset: one generation per optimizer
step), so ``sampling.batch_size`` is refused there. Reward weights are trl's
``reward_weights``. GRPO generates with trl's vLLM integration when
``model.backend`` is ``vllm`` (``model.gpu_memory_utilization`` is then trl's
``vllm_gpu_memory_utilization``, ``model.max_model_len`` its
``vllm_max_model_length``); trl's other ``vllm_*`` keys are read only then.

AdaMame's defaults (§3.2, appendix B.2): LoRA r 8, alpha 16, all linear modules;
SFT lr 2e-4, cosine, warm-up ratio 0.1; GRPO lr 1e-5, KL 0.001, Dr.GRPO.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, ValidationInfo, field_validator, model_validator

from components.settings.base import (
    MAX_ROWS, MAX_SECONDS, MAX_STEPS, MAX_TOKENS, MAX_WORKERS, ProjectPath, StrictSettings, VerifierName,
    changed_fields, check_registered,
)  # fmt: skip
from components.settings.lcrl import CouplingSettings, LcRLSettings, lcrl_problems
from components.settings.rewards import RewardAuditSettings, RewardSettings
from components.settings.shared import LoraSettings, ModelSettings, PromptSettings, SamplingSettings
from components.settings.trainer import TRL_OPERATIONAL, TRL_REFUSED, TrainerSettings, trl_checks_wanted

TRAINER_OPERATIONAL = {
    "timeout_s": "how long the task waits for the trainer process, not what it trains",
    "cpu_threads": "torch threads per process: the same numbers, computed faster or slower",
    "resume": "whether a killed run continues from its last checkpoint, not what is trained",
}
GRPO_BACKENDS = ("transformers", "vllm")



def _accelerate_config(value: str, info: ValidationInfo) -> str:
    if Path(value).suffix in (".yaml", ".yml"):  # a config of the profile's own
        return value
    return check_registered("accelerate config", value, info.context)


AccelerateConfig = Annotated[str, AfterValidator(_accelerate_config)]

class SFTSettings(TrainerSettings):
    """The LoRA SFT stage; every key not listed here is a field of trl's ``SFTConfig``.

    ``template``: ``chat`` (the tokenizer's chat template) or ``plain``
    (``prompt + completion``, for base models). ``accelerate_config`` names a
    config shipped in ``components/training/accelerate/`` (``cpu``, ``cpu-2``,
    ``single-gpu``, ``multi-gpu-zero2``, ``multi-gpu-zero3``, ``multi-gpu-zero3-2``, ``multi-gpu-fsdp``,
    ``multi-gpu-fsdp-4``) or the path of a YAML file; ``None`` runs
    plain ``python -m`` (one process). ``merge`` also saves the base model with
    the adapter merged in. ``lora: null`` trains all weights and saves the full model
    (``merge`` is then refused: there is no adapter to merge).
    """

    OPERATIONAL = {**TRAINER_OPERATIONAL, **TRL_OPERATIONAL}
    SECTION = "sft"
    TRL_CONFIG = "SFTConfig"
    TRL_DEFAULTS = {
        "learning_rate": 2e-4, "lr_scheduler_type": "cosine", "num_train_epochs": 1.0, "max_steps": -1,
        "per_device_train_batch_size": 2, "gradient_accumulation_steps": 1, "gradient_checkpointing": True,
        "max_length": 1024, "logging_steps": 1, "save_strategy": "steps", "save_steps": 50, "save_total_limit": 2,
        "seed": 0, "dataloader_num_workers": 0, "disable_tqdm": True,
    }  # fmt: skip

    model: ModelSettings = Field(default_factory=ModelSettings)
    template: Literal["chat", "plain"] = "chat"
    lora: LoraSettings | None = Field(default_factory=lambda: LoraSettings(dropout=0.05))
    warmup_ratio: float = Field(default=0.1, ge=0, lt=1)
    merge: bool = False
    resume: bool = True
    accelerate_config: AccelerateConfig | None = "cpu"
    cpu_threads: int | None = Field(default=None, ge=1, le=MAX_WORKERS)
    timeout_s: int = Field(default=24 * 3600, ge=1, le=MAX_SECONDS)

    @field_validator("model")
    @classmethod
    def _local_model(cls, value: ModelSettings) -> ModelSettings:
        return _trainable(value, "sft.model")

    @model_validator(mode="after")
    def _merge_needs_adapter(self) -> "SFTSettings":
        if self.lora is None and self.merge:
            raise ValueError("merge is read only with LoRA: with lora: null the trainer saves the full model")
        return self


class KLResetSettings(StrictSettings):
    """PCS: the reference becomes the current policy when the logged KL exceeds ``threshold``."""

    enabled: bool = False
    threshold: float = Field(default=0.2, gt=0, le=1_000)


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
    every_n_steps: int = Field(default=2, ge=1, le=MAX_STEPS)
    before_training: bool = True
    dataset: ProjectPath | None = None
    limit_per_language: int | None = Field(default=None, ge=1, le=MAX_ROWS)
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


class GRPOStageSettings(TrainerSettings):
    """The curriculum GRPO stage: trl ``GRPOTrainer`` + LoRA (or all weights: ``lora: null``) with registry rewards.

    ``model`` (base weights plus an optional SFT ``adapter``, merged in before a
    fresh adapter is trained) and ``dataset`` default to the outputs of the
    earlier stages of a recipe; set them to run the stage alone. The dataset
    (JSONL/parquet) holds a ``prompt`` or a question column, a gold column and
    ``lang`` (or ``dataset_lang`` for a one-language file). Every key not listed
    here is a field of trl's ``GRPOConfig`` (AdaMame: ``loss_type: dr_grpo`` with
    ``scale_rewards: none`` for the paper's text, ``group`` for its released code).
    ``lora: null`` trains every weight; with ``beta > 0`` trl then builds the
    reference model itself (a second copy of the weights) and ``kl_reset`` copies
    the policy's weights into it.
    ``max_prompt_tokens`` leaves out prompts longer than that many tokens once rendered
    (verl's ``max_prompt_length`` with ``filter_overlong_prompts``; trl has no such key).
    ``rollout_table_rows``: rollouts of each logging step shown as an MLflow table (trl's ``log_completions``
    writes them with every reward function's value and the rewards' extra columns); 0 turns it off.
    """

    OPERATIONAL = {**TRAINER_OPERATIONAL, **TRL_OPERATIONAL,
                   "rollout_table_rows": "how many rollouts each logging step shows in MLflow, not what is trained"}
    SECTION = "grpo"
    TRL_CONFIG = "GRPOConfig"
    TRL_DEFAULTS = {
        "loss_type": "dr_grpo", "scale_rewards": "group", "beta": 0.001, "epsilon": 0.2, "num_iterations": 1,
        "learning_rate": 1e-5, "lr_scheduler_type": "constant", "num_train_epochs": 1.0, "max_steps": -1,
        "per_device_train_batch_size": 8, "gradient_accumulation_steps": 1, "generation_batch_size": None,
        "vllm_mode": "colocate", "gradient_checkpointing": False, "logging_steps": 1, "save_strategy": "steps",
        "save_steps": 50, "save_total_limit": None, "disable_tqdm": True,
    }  # fmt: skip
    TRL_DERIVED = {
        "num_generations": "sampling.n", "max_completion_length": "sampling.max_new_tokens",
        "temperature": "sampling.temperature", "top_p": "sampling.top_p", "seed": "sampling.seed",
        "reward_weights": "rewards.N.weight", "chat_template_kwargs": "model.thinking", "use_vllm": "model.backend",
        "vllm_gpu_memory_utilization": "model.gpu_memory_utilization", "vllm_max_model_length": "model.max_model_len",
        "log_completions": "rollout_table_rows",
    }  # fmt: skip
    TRL_REFUSED = {
        **TRL_REFUSED, "eval_strategy": "the trainer gets no evaluation set; set validation (GRPO's validation curves)",
        "sync_ref_model": "trl refuses it for a LoRA policy and syncs on a fixed period; set kl_reset (the "
                          "reference becomes the policy when the KL exceeds a threshold, with LoRA or all weights)",
    }  # fmt: skip

    model: ModelSettings | None = None
    dataset: ProjectPath | None = None
    question_column: str = "question"
    gold_column: str = "gold"
    dataset_lang: str | None = None
    dataset_limit: int | None = Field(default=None, ge=1, le=MAX_ROWS)
    max_prompt_tokens: int | None = Field(default=None, ge=1, le=MAX_TOKENS)  # longer rendered prompts are left out (verl's filter)
    prompt: PromptSettings = Field(default_factory=PromptSettings)
    sampling: SamplingSettings = Field(
        default_factory=lambda: SamplingSettings(n=8, temperature=0.8, max_new_tokens=4096)
    )
    rewards: list[RewardSettings] = Field(default_factory=lambda: [RewardSettings()], min_length=1)
    lora: LoraSettings | None = Field(default_factory=LoraSettings)
    kl_reset: KLResetSettings = Field(default_factory=KLResetSettings)
    audit: RewardAuditSettings = Field(default_factory=RewardAuditSettings)
    validation: GRPOValidationSettings = Field(default_factory=GRPOValidationSettings)
    coupling: CouplingSettings = Field(default_factory=CouplingSettings)  # LcRL language-coupled groups
    lcrl: LcRLSettings | None = None  # LcRL search tool loop (components.settings.lcrl); None: plain rollouts
    resume: bool = True
    accelerate_config: AccelerateConfig | None = "cpu"
    cpu_threads: int | None = Field(default=None, ge=1, le=MAX_WORKERS)
    timeout_s: int = Field(default=7 * 24 * 3600, ge=1, le=MAX_SECONDS)
    rollout_table_rows: int = Field(default=8, ge=0, le=100_000)

    @field_validator("model")
    @classmethod
    def _generating_model(cls, value: ModelSettings | None) -> ModelSettings | None:
        return None if value is None else _trainable(value, "grpo.model")

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> "GRPOStageSettings":
        sampling = self.sampling
        if sampling.n < 2 or sampling.temperature <= 0:
            raise ValueError(f"GRPO compares several sampled completions per prompt: sampling.n must be at least 2 "
                             f"and sampling.temperature above 0 (got n={sampling.n}, temperature={sampling.temperature})")
        if changed_fields(sampling, ("batch_size",)):
            raise ValueError("sampling.batch_size is not read by GRPO: its generation batch is generation_batch_size "
                             "(completions; unset = one generation per optimizer step)")
        if lcrl_problems(self):
            raise ValueError("; ".join(lcrl_problems(self)))
        if self.max_prompt_tokens is not None and (self.lcrl is not None or self.coupling.mode != "none"):
            raise ValueError("max_prompt_tokens leaves prompts out, which would break LcRL's coupled groups and "
                             "search rows: unset it with grpo.lcrl or grpo.coupling.mode language")
        if self.kl_reset.enabled and self.trl_option("beta") == 0:
            raise ValueError("kl_reset needs a KL term: set beta > 0 (PCS: 0.001)")
        vllm_keys = self.changed_trl_options("vllm_") if trl_checks_wanted(self.SECTION, info) else []  # trl's defaults
        if (self.model is None or self.model.backend != "vllm") and vllm_keys:
            raise ValueError(f"{', '.join(vllm_keys)}: read only when model.backend is vllm")
        return self

    def trl_derived(self) -> dict[str, Any]:
        """``TRL_DERIVED``: sampling, reward weights and the vLLM switch from the section's own fields."""
        model, sampling = self.model or ModelSettings(), self.sampling
        return {
            **super().trl_derived(), "num_generations": sampling.n, "max_completion_length": sampling.max_new_tokens,
            "temperature": sampling.temperature, "top_p": sampling.top_p, "seed": sampling.seed,
            "reward_weights": [reward.weight for reward in self.rewards],
            "chat_template_kwargs": {"enable_thinking": model.thinking}, "use_vllm": model.backend == "vllm",
            "vllm_gpu_memory_utilization": model.gpu_memory_utilization, "vllm_max_model_length": model.max_model_len,
            "log_completions": self.rollout_table_rows > 0,
        }  # fmt: skip

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
