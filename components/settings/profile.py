"""A whole experiment: the sections of every stage and the rules that span sections.

The rules live on the model, so a profile validated anywhere (the CLI, a
deployment's parameters, a run started from the Prefect UI with edited values,
a test) is refused for the same reasons with the same words:

* the source of training queries must not be an evaluation benchmark (the model
  would be evaluated on what it trained on);
* rejection sampling with the SFT model as policy needs an SFT section;
* GRPO run alone needs its model and dataset; in a profile with the earlier
  stages they come from there (``grpo.model`` then only says how GRPO runs the
  SFT model: backend, precision, chat template);
* a recipe evaluates its base model and the models trained from it, and
  registers a trained model; its comparison's baseline is one of those models;
* the audit needs generations (a file, or the evaluation section to produce
  them), a packaged or readable stress table with the languages asked for, and
  a prompt style the number-only probe can rewrite;
* strict answer extraction needs a model that thinks (``components.settings.answers``);
* a vLLM generation's ``max_new_tokens`` must leave room for a prompt in its
  ``max_model_len`` (``components.settings.lengths``);
* evaluations fan out (``execution``) only where there are evaluations, and only
  the profile's benchmarks are sharded by language.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import Field, ValidationInfo, field_validator, model_validator

from components.settings.answers import answer_format_problems
from components.settings.audit import AuditSettings, stress_table_languages
from components.settings.base import (
    PACKAGED_PREFIX, StrictSettings, credential_keys, is_path_field, packaged_path, unknown_name_message,
)  # fmt: skip
from components.settings.data import DataSettings, source_overlaps
from components.settings.evaluation import EvaluationSettings
from components.settings.execution import ExecutionSettings
from components.settings.lengths import length_problems
from components.settings.shared import ModelSettings, TrackingSettings
from components.settings.training import GRPOStageSettings, SFTSettings

PROBE_STYLES = ("instruction", "prefix")
PLACEABLE = ("data", "sft", "rejection", "grpo", "evaluation", "audit")


class RegistrySettings(StrictSettings):
    """The MLflow model-registry entry of a recipe's final model (GRPO's, else SFT's).

    ``name`` ``None``: the profile's name. ``alias`` is set on the new version;
    ``merged`` also registers the full model with the adapter merged in.
    """

    name: str | None = None
    alias: str = "candidate"
    merged: bool = False

    @field_validator("name", "alias")
    @classmethod
    def _simple(cls, value: str | None) -> str | None:
        if value is not None and (not value or any(c in value for c in "/@ :")):
            raise ValueError("must be non-empty, without '/', '@', ':' or spaces (it goes into models:/NAME@ALIAS)")
        return value


class NightlySettings(StrictSettings):
    """The nightly re-evaluation of registered models on this profile's benchmarks.

    ``models``: registered model names (empty: the registry section's name, else the
    profile's); each is evaluated at ``alias`` (a moving pointer such as
    ``candidate``) and at its ``latest`` newest versions. ``cron`` is the schedule
    of the ``nightly-evaluation`` deployment (UTC).
    """

    cron: str = "0 2 * * *"
    models: list[str] = Field(default_factory=list)
    alias: str | None = "candidate"
    latest: int = Field(default=0, ge=0, le=10_000)

    @model_validator(mode="after")
    def _something_to_evaluate(self) -> "NightlySettings":
        if self.alias is None and self.latest == 0:
            raise ValueError("set an alias or latest >= 1: otherwise no version is evaluated")
        if len(self.cron.split()) != 5:
            raise ValueError(f"cron {self.cron!r}: expected five fields (minute hour day month weekday)")
        return self


class Profile(StrictSettings):
    """A whole experiment. Stages whose section is ``None`` are not run."""

    OPERATIONAL = {"project_dir": "where state lives, not what is computed",
                   "tracking": "where results are logged, not what is computed",
                   "placement": "which machine runs a stage, not what it computes",
                   "nightly": "when registered models are re-evaluated, not what a run computes",
                   "execution": "which workers and GPUs compute the evaluations, not what they compute"}

    name: str
    project_dir: str | None = None
    tracking: TrackingSettings = Field(default_factory=TrackingSettings)
    evaluation: EvaluationSettings | None = None
    audit: AuditSettings | None = None
    data: DataSettings | None = None
    sft: SFTSettings | None = None
    grpo: GRPOStageSettings | None = None
    registry: RegistrySettings | None = None
    nightly: NightlySettings | None = None
    placement: dict[str, str] = Field(default_factory=dict)
    execution: ExecutionSettings = Field(default_factory=ExecutionSettings)

    @field_validator("name")
    @classmethod
    def _name_is_simple(cls, value: str) -> str:
        if not value or any(c in value for c in "/\\ "):
            raise ValueError("name must be non-empty, without spaces or slashes")
        return value

    @field_validator("placement")
    @classmethod
    def _placed_stages(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value) - set(PLACEABLE))
        if unknown:
            raise ValueError(f"unknown stages {unknown} (placeable: {', '.join(PLACEABLE)}); each maps a stage to "
                             "the Prefect work pool that runs it")
        return value

    @model_validator(mode="after")
    def _cross_section_rules(self, info: ValidationInfo) -> "Profile":
        problems = data_problems(self) + grpo_problems(self) + audit_problems(self, info.context)
        problems += recipe_problems(self)
        problems += execution_problems(self)
        problems += answer_format_problems(self.evaluation) + length_problems(self) + registry_problems(self)
        problems += placement_problems(self)
        if problems:
            raise ValueError(join_problems(problems))
        return self

    def path(self, value: str | None) -> Path | None:
        """A path of this profile: absolute as given, else relative to the project directory."""
        return resolve_path(value, self.project_dir)

    def with_absolute_paths(self) -> "Profile":
        """A copy whose every path field (and every model that is a local directory) is absolute.

        Relative paths in a profile are relative to the project directory; a flow
        makes them absolute once, so no task or component resolves paths again.
        """
        base = Path(self.project_dir or ".").resolve()
        return self.model_copy(update={"project_dir": str(base), **absolute_paths(self, base)})


def placement_problems(profile: "Profile") -> list[str]:
    """A placed stage whose settings (or the tracking store) hold a URL with a user and password: the stage's
    parameters reach its work pool through Prefect, which carries them redacted (``http://***@host``)."""
    problems = []
    for stage in profile.placement:
        section = "data" if stage == "rejection" else stage
        keys = credential_keys(profile.tracking.model_dump(), "tracking")
        keys += credential_keys(getattr(profile, section).model_dump(), section) if getattr(profile, section) else []
        if keys:
            problems.append(f"placement.{stage}, {', '.join(keys)}: a URL with a user and password reaches a placed "
                            "stage through Prefect's parameters, which carry it redacted (***); run the stage here "
                            "(drop it from placement) or use a URL without credentials")
    return problems


def registry_problems(profile: "Profile") -> list[str]:
    """``registry.merged`` when the registered model is already a full model (its stage trains with ``lora: null``)."""
    final = profile.grpo or profile.sft
    if profile.registry is None or not profile.registry.merged or final is None or final.lora is not None:
        return []
    stage = "grpo" if profile.grpo is not None else "sft"
    return [f"registry.merged with {stage}.lora null: the registered model is already a full model, with no adapter "
            "to merge; unset registry.merged"]


def absolute_paths(section: StrictSettings, base: Path) -> dict:
    """``model_copy`` updates making every ``ProjectPath`` field of ``section`` (recursively) absolute."""
    updates: dict = {}
    for name in type(section).model_fields:
        value = section.__dict__[name]
        if isinstance(value, str) and is_path_field(type(section), name):
            updates[name] = str(resolve_path(value, base))
        elif isinstance(value, ModelSettings) and (base / value.model).is_dir():
            updates[name] = value.model_copy(update={"model": str(base / value.model), **absolute_paths(value, base)})
        elif isinstance(value, StrictSettings):
            updates[name] = value.model_copy(update=absolute_paths(value, base))
        elif isinstance(value, list) and value and isinstance(value[0], StrictSettings):
            updates[name] = [item.model_copy(update=absolute_paths(item, base)) for item in value]
    return updates


def join_problems(problems: list[str]) -> str:
    """Several problems as one message, one per line (pydantic keeps a validator's message whole)."""
    return problems[0] if len(problems) == 1 else "\n".join([f"{len(problems)} problems:", *problems])


def resolve_path(value: str | Path | None, base_dir: str | Path | None) -> Path | None:
    """``value`` when absolute (``~`` expanded), the shipped file a ``packaged:`` reference names, else ``value``
    relative to ``base_dir`` (the current directory if ``None``).

    >>> str(resolve_path("../data/x.json", "/project/runs")), resolve_path(None, "/p")
    ('/project/data/x.json', None)
    >>> resolve_path("packaged:mgsm/mgsm_fr.tsv", "/p").parts[-4:]
    ('data', 'packaged', 'mgsm', 'mgsm_fr.tsv')
    """
    if value is None:
        return None
    if str(value).startswith(PACKAGED_PREFIX):
        return packaged_path(str(value))
    candidate = Path(value).expanduser()
    if not candidate.is_absolute():
        candidate = Path(base_dir or ".").resolve() / candidate
    return Path(os.path.normpath(candidate))


def data_problems(profile: Profile) -> list[str]:
    """Source/evaluation overlap and where the rejection-sampling policy comes from."""
    data, problems = profile.data, []
    if data is None:
        return problems
    benchmarks = profile.evaluation.benchmarks if profile.evaluation else []
    for name in source_overlaps(data.source, benchmarks) if data.source else []:
        problems.append(f"data.source: {name!r} is both the source of training queries and an evaluation "
                        "benchmark of this profile; drop it from evaluation.benchmarks or use another source")
    if data.rejection is not None and data.rejection.policy is None and profile.sft is None:
        problems.append("data.rejection.policy: null means the SFT model, but the profile has no sft section; "
                        "add one or give data.rejection.policy")
    return problems


def grpo_problems(profile: Profile) -> list[str]:
    """GRPO needs a model and a dataset: from its section, or from the stages before it."""
    grpo, problems = profile.grpo, []
    if grpo is None:
        return problems
    if grpo.model is None and profile.sft is None:
        problems.append("grpo.model: unset and the profile has no sft section to train from; set grpo.model")
    if grpo.model is not None and profile.sft is not None:
        if grpo.model.model != profile.sft.model.model or grpo.model.adapter is not None:
            problems.append(f"grpo.model: GRPO trains the SFT model of this profile (base {profile.sft.model.model!r} "
                            "plus the trained adapter); set grpo.model.model to sft.model.model and leave its adapter "
                            "unset, or drop the sft section to train another model")
    qa_rows = grpo.lcrl is not None and grpo.lcrl.dataset is not None  # LcRL: rows built from a QA benchmark
    rl_set = profile.data is not None and profile.data.rejection is not None
    if grpo.dataset is None and not qa_rows and not rl_set:
        problems.append("grpo.dataset: unset and the profile has no data.rejection section to build the RL set; "
                        "set grpo.dataset")
    if qa_rows and rl_set:
        problems.append("grpo.lcrl.dataset: the recipe trains GRPO on the RL set of data.rejection, so the QA rows "
                        "would never be read; drop one of them")
    return problems


def recipe_problems(profile: Profile) -> list[str]:
    """A recipe evaluates the models it trains from one base, and registers only a trained model."""
    problems = []
    evaluation, sft = profile.evaluation, profile.sft
    if evaluation is not None and sft is not None and evaluation.model.model != sft.model.model:
        problems.append(f"evaluation.model.model: a recipe evaluates its base model {sft.model.model!r} and the models "
                        "trained from it; set evaluation.model.model to sft.model.model (the other evaluation.model "
                        "fields say how the models are run)")
    if evaluation is not None and sft is not None and evaluation.model.adapter is not None:
        problems.append("evaluation.model.adapter: a recipe evaluates the adapters it trains; leave it unset")
    if profile.registry is not None and sft is None:
        problems.append("registry: only a trained model is registered; the profile has no sft section")
    if evaluation is not None and not evaluation.evaluate_base and sft is None and profile.grpo is None:
        problems.append("evaluation.evaluate_base: false leaves the trained models to evaluate, and the profile has "
                        "no sft or grpo section; set it true")
    baseline = evaluation.baseline if evaluation is not None else "base"
    if baseline in ("sft", "grpo") and getattr(profile, baseline) is None:
        problems.append(f"evaluation.baseline: {baseline!r} is evaluated only after a {baseline} stage, and the "
                        f"profile has no {baseline} section; use base or previous")
    return problems


def execution_problems(profile: Profile) -> list[str]:
    """Fan-out needs evaluations to fan out, and shards only benchmarks the evaluation has."""
    execution = profile.execution
    if not execution.fans_out:
        return []
    if profile.evaluation is None:
        return [f"execution.runner: {execution.runner!r} fans out evaluations, and the profile has no evaluation "
                "section; drop the execution section or add one"]
    names = [bench.name for bench in profile.evaluation.benchmarks]
    return [f"execution.shard_languages.{i}: {name!r} is not a benchmark of evaluation.benchmarks ({', '.join(names)})"
            for i, name in enumerate(execution.shard_languages) if name not in names]


def audit_problems(profile: Profile, context: Mapping[str, Any] | None = None) -> list[str]:
    """Where the audited generations come from, the stress table's languages, the probe's prompt style."""
    audit, problems = profile.audit, []
    if audit is None:
        return problems
    if audit.generations is None and profile.evaluation is None:
        problems.append("audit.generations: unset, and the profile has no evaluation section to generate from")
    prompt = profile.evaluation.prompt if profile.evaluation is not None else None
    style = prompt.style if prompt is not None else None
    if audit.probe and audit.number_only_generations is None and style not in (None, *PROBE_STYLES):
        problems.append(f"audit.probe: the number-only probe rewrites the instruction of prompt styles "
                        f"{' or '.join(PROBE_STYLES)} (evaluation.prompt.style is {style!r}); set "
                        "audit.probe=false or audit.number_only_generations")
    elif audit.probe and audit.number_only_generations is None and prompt is not None and prompt.instruction == "none":
        problems.append("audit.probe: the number-only probe rewrites the instruction, and evaluation.prompt.instruction "
                        "is none; set audit.probe=false or audit.number_only_generations")
    return problems + stress_table_problems(profile, context)


def stress_table_problems(profile: Profile, context: Mapping[str, Any] | None = None) -> list[str]:
    """A stress table given by a relative path: readable, and holding every language asked for."""
    audit = profile.audit
    if audit.stress_table is None or Path(audit.stress_table).expanduser().is_absolute():
        return []  # checked by the section itself
    try:
        languages = stress_table_languages(str(profile.path(audit.stress_table)), context)
    except (OSError, ValueError, yaml.YAMLError) as error:
        return [f"audit.stress_table: {error}"]
    return [f"audit.stress_languages.{i}: {unknown_name_message('stress-table language', lang, languages)}"
            for i, lang in enumerate(audit.stress_languages) if lang not in languages]
