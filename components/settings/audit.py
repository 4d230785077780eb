"""The reward-audit section ("Multilingual verifier bias in RLVR", arXiv 2608.20362).

``generations``: a JSONL/parquet file of generation rows to audit; ``None`` runs
the evaluation section of the same profile for fresh generations.
``number_only_generations``: rows of the answer-interface probe; ``None`` with
``probe`` on generates them with the evaluation model from the same prompts,
rewritten to ask for a bare number. ``proxies`` are audited against
``reference``; the guard checks ``guard_verifier`` (VLB of ``guard_metric``:
warn above ``warn_vlb``, fail above ``fail_vlb``). ``stress_table``: ``None`` =
the packaged table; ``stress_languages`` must be languages of that table (a
table given by a relative path is checked by the profile, which knows the
project directory); ``stress_golds``: ``None`` = the table's golds.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import AfterValidator, Field, ValidationInfo, model_validator

from components.settings.base import ProjectPath, StrictSettings, VerifierName, unknown_name_message
from components.settings.registries import registries_for


def stress_table_languages(path: str | None, context: Mapping[str, Any] | None = None) -> tuple[str, ...]:
    """The languages of a stress table (``None``: the packaged one), read by the audit's own reader (through the
    registries of the validation ``context``, ``components.settings.registries``)."""
    return tuple(sorted(registries_for(context).stress_table_languages(path)))


def _stress_language(value: str, info: ValidationInfo) -> str:
    table = info.data.get("stress_table")
    if table is not None and not Path(table).expanduser().is_absolute():
        return value
    try:
        known = stress_table_languages(table, info.context)
    except (OSError, ValueError, yaml.YAMLError) as error:
        raise ValueError(f"stress table unreadable: {error}") from None
    if value not in known:
        raise ValueError(unknown_name_message("stress-table language", value, known))
    return value


class AuditSettings(StrictSettings):
    """Which generations are audited, against which reference, with which thresholds."""

    generations: ProjectPath | None = None
    number_only_generations: ProjectPath | None = None
    probe: bool = True
    selection: bool = True
    reference: VerifierName = "trusted"
    proxies: list[VerifierName] = Field(default_factory=lambda: ["exact", "numeric", "math_verify", "hybrid"])
    stress_table: ProjectPath | None = None
    stress_languages: list[Annotated[str, AfterValidator(_stress_language)]] = Field(
        default_factory=lambda: ["en", "ja", "zh", "fr", "de", "th"])
    stress_golds: list[str] | None = None
    guard_verifier: VerifierName = "exact"
    guard_metric: Literal["fnr", "fpr", "err"] = "err"
    warn_vlb: float = Field(default=0.1, ge=0, le=1)
    fail_vlb: float = Field(default=0.3, ge=0, le=1)

    @model_validator(mode="after")
    def _thresholds_ordered(self) -> "AuditSettings":
        if self.warn_vlb > self.fail_vlb:
            raise ValueError(f"warn_vlb ({self.warn_vlb}) must not exceed fail_vlb ({self.fail_vlb})")
        return self
