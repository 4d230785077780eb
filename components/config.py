"""Profiles from YAML: loading, dotted ``key=value`` overrides, fingerprints, flattening.

The section classes and every rule they check live in ``components.settings``;
this module only turns text into a validated ``Profile`` and reports every
problem at once, naming the file and each bad key. The YAML is read within bounds
(``components.profile_yaml``: aliases and keys given twice refused, a budget on the
values a mapping stands for) before anything copies it. Overrides are applied to the
raw mapping before validation (``evaluation.sampling.n=4``,
``evaluation.benchmarks.0.limit=3``); values are parsed as YAML.

trl checks the keys of a trainer section (``components.settings.trainer``), which
costs the seconds of importing trl, torch and transformers. ``trl_checks`` names
the trainer sections to check now (a command's trained sections; ``None``: every
one); ``checked_trainers`` checks the others when a command comes to use them,
with the same messages.

>>> p = load_profile_dict({"name": "t"}, ["tracking.experiment=demo"])
>>> p.tracking.experiment
'demo'
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from components.profile_yaml import check_size, read_yaml_text
from components.setting_keys import key_problem
from components.settings import REVEAL_CREDENTIALS, Profile, ProfileError, cache_view, redact_credentials

__all__ = ["REVEALED", "apply_override", "apply_overrides", "checked_trainers", "fingerprint", "flatten",
           "format_validation_error", "load_profile", "load_profile_dict", "parse_override"]

TRAINER_SECTIONS = ("sft", "grpo")
REVEALED = {REVEAL_CREDENTIALS: True}  # a dump validated again in this process keeps its URLs' credentials


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
    try:
        value = read_yaml_text(raw, f"override {text!r}") if raw.strip() else None
    except yaml.YAMLError as error:
        problem = str(error).splitlines()[0]
        raise ProfileError(f"override {text!r}: the value is not valid YAML ({problem})") from None
    return path, value


def apply_override(data: dict, path: list[str], value: Any, text: str = "") -> None:
    """Set ``value`` at ``path`` in nested dicts/lists (list indices are integers); ``ProfileError`` names a bad path."""
    node: Any = data
    for depth, part in enumerate(path):
        last = depth == len(path) - 1
        where = ".".join(path[: depth + 1])
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise ProfileError(f"override {text or '.'.join(path)!r}: {where} is not an index of a list of "
                                   f"{len(node)} item(s)")
            if last:
                node[int(part)] = value
                return
            node = node[int(part)]
        elif isinstance(node, dict):
            if last:
                node[part] = value
                return
            if node.get(part) is None:
                node[part] = [] if path[depth + 1].isdigit() else {}
            node = node[part]
        else:
            raise ProfileError(f"override {text or '.'.join(path)!r}: {'.'.join(path[:depth])} holds "
                               f"{node!r}, which has no key {part!r}")


def format_validation_error(source: str, error: ValidationError) -> str:
    """Every problem of a validation error on its own line, each named by its dotted key."""
    lines = [f"{source}: {error.error_count()} invalid setting(s)"]
    for item in error.errors():
        where = ".".join(str(p) for p in item["loc"]) or "(profile)"
        message = item["msg"].removeprefix("Value error, ")
        loc = [str(p) for p in item["loc"]]
        problem = key_problem(Profile, loc) if item["type"] == "extra_forbidden" and loc \
            and key_problem(Profile, loc[:-1]) is None else None  # a key of a profile (not of a nested model's own)
        if problem:  # a mistyped key: the line names the closest one
            lines.append(f"  - {problem}")
            continue
        for number, text in enumerate(message.splitlines()):
            lines.append(f"  - {where}: {text}" if number == 0 else f"      {text}")
    return "\n".join(lines)


_MISSING = object()


def value_at(data: Any, path: list[str]) -> Any:
    """The value at a dotted path of nested dicts/lists, or a sentinel when there is none."""
    node = data
    for part in path:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return _MISSING
    return node


def apply_overrides(data: dict, overrides: list[str]) -> list[str]:
    """Apply ``key=value`` overrides to ``data`` in place; returns those that changed a value (the last of each key).

    >>> data = {"grpo": {"beta": 0.0}}
    >>> apply_overrides(data, ["grpo.beta=0.0", "grpo.learning_rate=1e-5", "grpo.learning_rate=5e-5"])
    ['grpo.learning_rate=5e-5']
    """
    changed: dict[str, str] = {}
    for text in overrides:
        path, value = parse_override(text)
        problem = key_problem(Profile, path)
        if problem:
            raise ProfileError(f"override {text!r}: {problem}")
        before = value_at(data, path)
        apply_override(data, path, value, text)
        key = ".".join(path)
        changed.pop(key, None)
        if before is _MISSING or before != value:
            changed[key] = f"{key}={text.split('=', 1)[1].strip()}"
    return list(changed.values())


def validation_context(trl_checks: Iterable[str] | None) -> dict | None:
    """The validation context checking only the trainer sections ``trl_checks`` with trl (``None``: every one)."""
    from components.settings.trainer import TRL_CHECKS

    return None if trl_checks is None else {TRL_CHECKS: frozenset(trl_checks)}


def labelled(profile: Profile, original: dict, changed: list[str], context: dict | None = None) -> Profile:
    """``profile`` with its runs named after the overrides that changed it (``tracking.run_label``), which it
    also keeps key by key (``tracking.overrides``), with the credentials of any URL in them redacted.

    An override changed the profile when its key's validated value differs from the profile's without
    overrides (a default counts as the profile's value); when that profile does not validate on its own,
    every override that changed the mapping counts. A label set by an override stays, and ``tracking``
    keys say where results go, nothing about the run.

    >>> load_profile_dict({"name": "t"}, ["tracking.experiment=x", "name=u"]).tracking.overrides
    {'name': 'u'}
    """
    telling = [text for text in changed if not text.startswith("tracking.")]
    if telling:
        try:
            before = Profile.model_validate(original, context=context).model_dump(mode="json")
            after = profile.model_dump(mode="json")
            telling = [t for t in telling if value_at(before, path_of(t)) != value_at(after, path_of(t))]
        except ValidationError:
            pass
    if not telling:
        return profile
    telling = [redact_credentials(text) for text in telling]  # names of runs and params: no URL's password
    update = {"overrides": {".".join(path_of(t)): t.split("=", 1)[1] for t in telling}}
    if not any(text.startswith("tracking.run_label=") for text in changed):
        update["run_label"] = " ".join(telling)
    return profile.model_copy(update={"tracking": profile.tracking.model_copy(update=update)})


def path_of(override: str) -> list[str]:
    return [part for part in override.split("=", 1)[0].split(".") if part]


def load_profile_dict(data: dict, overrides: list[str] | None = None, source: str = "<dict>",
                      trl_checks: Iterable[str] | None = None) -> Profile:
    """Validate a profile mapping after applying dotted overrides (its runs are labelled with those that changed it).

    ``trl_checks``: the trainer sections trl checks now (``None``: every one; see ``checked_trainers``).
    """
    check_size(data, source)  # before any copy: shared parts would be written out in full
    data = json.loads(json.dumps(data))  # deep copy, plain types only
    original = json.loads(json.dumps(data))
    changed = apply_overrides(data, overrides or [])
    context = validation_context(trl_checks)
    try:
        profile = Profile.model_validate(data, context=context)
    except ValidationError as error:
        raise ProfileError(format_validation_error(source, error)) from None
    return labelled(profile, original, changed, context)


def checked_trainers(profile: Profile, sections: Iterable[str] = TRAINER_SECTIONS, source: str = "<profile>") -> Profile:
    """``profile`` with its trainer sections among ``sections`` checked by trl (``ProfileError`` as at load).

    A section loaded without trl's checks holds its trl keys as given; validating
    the profile's dump again with those sections checked gives the errors and the
    values that loading it with them checked gives.
    """
    wanted = [name for name in TRAINER_SECTIONS if name in sections and getattr(profile, name) is not None]
    if all(getattr(profile, name).trl_checked for name in wanted):
        return profile
    context = validation_context([name for name in TRAINER_SECTIONS if name in wanted
                                  or (getattr(profile, name) is not None and getattr(profile, name).trl_checked)])
    try:
        return Profile.model_validate(profile.model_dump(mode="json", context=REVEALED), context=context)
    except ValidationError as error:
        raise ProfileError(format_validation_error(source, error)) from None


def read_profile_file(path: str | Path) -> dict:
    """The raw mapping of a YAML profile (``name`` defaults to the file's stem)."""
    path = Path(path)
    try:
        data = read_yaml_text(path.read_text(encoding="utf-8-sig"), str(path)) or {}
    except FileNotFoundError:
        raise ProfileError(f"{path}: no such profile") from None
    except IsADirectoryError:
        raise ProfileError(f"{path}: is a directory, not a profile") from None
    except UnicodeDecodeError as error:
        raise ProfileError(f"{path}: not UTF-8 text (byte {error.start}: {error.reason})") from None
    except yaml.YAMLError as error:
        raise ProfileError(f"{path}: not valid YAML: {error}") from None
    if not isinstance(data, dict):
        raise ProfileError(f"{path}: a profile must be a mapping at the top level")
    data.setdefault("name", path.stem)
    return data


def load_profile(path: str | Path, overrides: list[str] | None = None, trl_checks: Iterable[str] | None = None) -> Profile:
    """Read a YAML profile, apply ``key=value`` overrides, validate everything (trl: the ``trl_checks`` sections)."""
    return load_profile_dict(read_profile_file(path), overrides, source=str(path), trl_checks=trl_checks)


def fingerprint(value: Any) -> str:
    """Stable sha256 of settings, dicts and lists (key order does not matter).

    Settings enter by their cache view: a section's operational fields (a timeout,
    a thread count) are left out, so they never change a key.

    >>> fingerprint({"a": 1, "b": 2}) == fingerprint({"b": 2, "a": 1})
    True
    """
    value = cache_view(value)
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
