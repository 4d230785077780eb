"""Which settings a run shows as MLflow params, and where the rest of them are.

MLflow's runs table has a column per param key of every run in the experiment. A run that logged every
setting (the demo's profile: over three hundred dotted keys, and each trl option of both trainers) made a
table of more than a thousand columns in which the few settings that tell runs apart were lost. A run
therefore logs as params the settings that differ from their defaults (and the required ones, which have
none: the profile's name, the model), beside the overrides typed for it (``override.<key>``,
``runtime.tracking``); every resolved setting, defaults included, is in the run's ``settings.json``
artifact under the same dotted keys. Nothing reads params back: cache keys and resumption come from the
settings themselves (``runtime.cache``), never from a run's params.

"Default" is the value the field would have had if the profile had not named it: the field's default, or,
inside a section that is itself a field's default object (``sft.lora``'s ``dropout: 0.05``), that object's
value; a trainer section's trl keys compare with the section's ``TRL_DEFAULTS``, which fill the keys a
profile leaves out. Written by hand: pydantic reports which fields were *given* (``model_fields_set``), not
which differ from their defaults, and a dumped profile (a deployment's parameters) gives every field.

>>> from components.settings import TrackingSettings
>>> changed_params(TrackingSettings(experiment="mine"), "tracking.")
{'tracking.experiment': 'mine'}
"""

from __future__ import annotations

from typing import Any, Mapping

from pydantic import BaseModel

from components.config import flatten

SETTINGS_FILE = "settings.json"
_NONE = object()  # a field with no default: always shown


def changed_params(section: BaseModel, prefix: str = "", default: Any = _NONE) -> dict[str, Any]:
    """The dotted keys of ``section`` (under ``prefix``) whose values differ from their defaults, as MLflow params
    show them (the JSON form, credentials redacted; lists as JSON text, as ``flatten`` writes them)."""
    dumped = section.model_dump(mode="json")
    fields = type(section).model_fields
    extra = section.__pydantic_extra__ or {}
    out: dict[str, Any] = {}
    for name in [*fields, *extra]:
        if name not in dumped:  # a field the JSON form leaves out
            continue
        value = section.__dict__[name] if name in fields else extra[name]
        base = _default(section, name, default)
        if isinstance(value, BaseModel):
            out.update(changed_params(value, f"{prefix}{name}.", base if type(base) is type(value) else _NONE))
        elif base is _NONE or value != base:
            out.update(flatten({name: dumped[name]}, prefix))
    return out


def _default(section: BaseModel, name: str, default: Any) -> Any:
    """What ``section.<name>`` would be unset: the enclosing default object's value, else the field's default
    (a trl key: the section's ``TRL_DEFAULTS``); ``_NONE`` where there is none."""
    if isinstance(default, BaseModel):
        stored = {**default.__dict__, **(default.__pydantic_extra__ or {})}
        return stored.get(name, _NONE)
    field = type(section).model_fields.get(name)
    if field is None:
        return getattr(type(section), "TRL_DEFAULTS", {}).get(name, _NONE)
    return _NONE if field.is_required() else field.get_default(call_default_factory=True)


def run_params(sections: Mapping[str, BaseModel]) -> dict[str, Any]:
    """The params of a run over ``sections`` (prefix -> section): each section's changed settings."""
    return {key: value for prefix, section in sections.items() for key, value in changed_params(section, prefix).items()}


def every_setting(sections: Mapping[str, BaseModel]) -> dict[str, Any]:
    """Every resolved setting of ``sections`` under its dotted key (what ``settings.json`` holds)."""
    return {key: value for prefix, section in sections.items() for key, value in flatten(section, prefix).items()}
