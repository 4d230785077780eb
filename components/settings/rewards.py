"""A GRPO reward and the audit of its verifier before training.

``RewardSettings`` names a reward of the registry (``components.rewards``), its
weight in trl's weighted sum (trl's ``reward_weights``) and the factory's
keyword parameters, checked by the reward's own spec when the profile loads (through
the registries handed to the settings, ``components.settings.registries``). ``RewardAuditSettings`` says how the verifier a reward judges with is
audited against a reference on policy rollouts ("Multilingual verifier bias in
RLVR": VLB with warn/fail thresholds).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationError, ValidationInfo, model_validator

from components.settings.base import (
    MAX_ROWS, MAX_SAMPLES, ProjectPath, StrictSettings, VerifierName, check_registered, number_problems,
)  # fmt: skip
from components.settings.registries import registries_for
from components.settings.shared import ModelSettings

MAX_WEIGHT = 1_000_000.0  # a reward's weight in trl's weighted sum (the papers' are 0.1 to 1)


class RewardSettings(StrictSettings):
    """One reward: registry name, weight in trl's weighted sum, the factory's keyword parameters.

    A ``judge`` parameter (the model a reward asks, M-Thinker's) holds ``ModelSettings`` fields and is
    checked as such when the profile loads.
    """

    name: str = "accuracy"
    weight: float = Field(default=1.0, ge=-MAX_WEIGHT, le=MAX_WEIGHT)
    params: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _registered(self, info: ValidationInfo) -> "RewardSettings":
        problems = number_problems(self.params, "params")
        problems = registries_for(info.context).reward_problems(self.name, self.params) + problems
        verifier = self.params.get("verifier")
        if isinstance(verifier, str):
            try:
                check_registered("verifier", verifier, info.context)
            except ValueError as error:
                problems.append(f"params.verifier: {error}")
        judge = self.params.get("judge")
        if judge is not None:  # a judge model (M-Thinker) is a model section: checked like one
            try:
                ModelSettings.model_validate(judge, context=info.context)
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
    sample_size: int = Field(default=32, ge=1, le=MAX_ROWS)
    num_generations: int = Field(default=2, ge=1, le=MAX_SAMPLES)
    warn_vlb: float = Field(default=0.1, ge=0, le=1)
    fail_vlb: float = Field(default=0.3, ge=0, le=1)
    metric: Literal["err", "fnr", "fpr"] = "err"

    @model_validator(mode="after")
    def _thresholds_ordered(self) -> "RewardAuditSettings":
        if self.warn_vlb > self.fail_vlb:
            raise ValueError(f"warn_vlb ({self.warn_vlb}) must not exceed fail_vlb ({self.fail_vlb})")
        return self
