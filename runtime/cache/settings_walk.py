"""One walk over the settings a task receives: every section, nested in other sections, dataclasses, lists and
dicts, handed to a function that says what that section itself names.

The file inputs (``runtime.cache.file_inputs``) and the hub repositories (``runtime.cache.hub_revisions``) of a task's key are
both read this way. A section's fields are read from its ``__dict__``, not with ``getattr``: reading a field for a
key is not consuming it (``tests/integration/test_settings_consumed.py`` records attribute reads). Written by hand:
pydantic walks a model's own fields, not settings nested in the dataclasses and containers tasks are handed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from pydantic import BaseModel

Found = TypeVar("Found")


def gather(value: Any, own: Callable[[Any], Iterable[Found]]) -> list[Found]:
    """What ``own(section)`` gives for every settings section inside ``value``, outer sections first."""
    from components.settings import StrictSettings

    if isinstance(value, StrictSettings):
        nested = [item for item in value.__dict__.values() if not isinstance(item, str)]
        return [*own(value), *(found for item in nested for found in gather(item, own))]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [found for f in dataclasses.fields(value) for found in gather(getattr(value, f.name), own)]
    if isinstance(value, BaseModel):
        return [found for name in type(value).model_fields for found in gather(value.__dict__.get(name), own)]
    if isinstance(value, (list, tuple)):
        return [found for item in value for found in gather(item, own)]
    if isinstance(value, dict):
        return [found for item in value.values() for found in gather(item, own)]
    return []
