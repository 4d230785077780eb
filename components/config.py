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
from typing import Any

import yaml
from pydantic import BaseModel, Field, ValidationError, field_validator

from components.settings_shared import (  # re-exported: the profile's section classes
    BenchmarkSettings,
    EvaluationSettings,
    ModelSettings,
    ProfileError,
    PromptSettings,
    SamplingSettings,
    ScoringSettings,
    StrictSettings,
    TrackingSettings,
)
from components.settings_stages import (  # re-exported: the stage sections
    AuditSettings,
    DataSettings,
    DataSourceSettings,
    GRPOStageSettings,
    RejectionSettings,
    SFTSettings,
    TraceSettings,
    TranslationSettings,
)


__all__ = [
    "AuditSettings", "BenchmarkSettings", "DataSettings", "DataSourceSettings", "EvaluationSettings",
    "GRPOStageSettings", "ModelSettings", "Profile", "ProfileError", "PromptSettings", "RejectionSettings",
    "SFTSettings", "SamplingSettings", "ScoringSettings", "StrictSettings", "TraceSettings", "TrackingSettings",
    "TranslationSettings", "apply_override", "fingerprint", "flatten", "load_profile", "load_profile_dict",
    "parse_override",
]


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
