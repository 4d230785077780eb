"""Whether a dotted key names a setting of the profile's schema, and the closest one when it does not.

The schema is read off the pydantic classes (``model_fields`` and their annotations),
so a key is checked before any value: ``evaluation.benchmark.0.limit`` is refused as
"no such key `evaluation.benchmark`; did you mean `evaluation.benchmarks`?" whether or
not the profile has a list there. The closest name is ``difflib.get_close_matches``'s
(Python's standard ratio of matching characters); the walk over typing annotations is
written here because pydantic has no public "field at a path" lookup.
"""

from __future__ import annotations

import difflib
import typing
from types import NoneType, UnionType

from pydantic import BaseModel

_LISTS = (list, tuple, set, frozenset)


def _members(annotation) -> list:
    """The alternatives of an annotation: ``X | None`` and ``Annotated[X, ...]`` are ``X``."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    if origin in (typing.Union, UnionType):
        return [m for arg in typing.get_args(annotation) if arg is not NoneType for m in _members(arg)]
    return [annotation]


def _step(annotation, part: str) -> tuple[str, list]:
    """What one part of a key reaches from ``annotation``: ``("ok", next annotations)``, or why it cannot."""
    reached, names, leaf = [], [], True
    for member in _members(annotation):
        origin = typing.get_origin(member) or member
        args = typing.get_args(member)
        if isinstance(member, type) and issubclass(member, BaseModel):
            leaf = False
            fields = member.model_fields
            names += [name for name in fields]
            if part in fields:
                reached.append(fields[part].annotation)
            elif member.model_config.get("extra") == "allow":  # a trainer section: other keys are trl's, checked there
                reached.append(typing.Any)
        elif origin in _LISTS:
            leaf = False
            if part.isdigit():
                reached.append(args[0] if args else typing.Any)
        elif origin is dict:
            leaf = False
            reached.append(args[1] if len(args) == 2 else typing.Any)
        elif member is typing.Any:
            leaf = False
            reached.append(typing.Any)
    if reached:
        return "ok", reached
    if leaf:
        return "leaf", []
    return ("index", []) if not names else ("name", sorted(set(names)))


def key_problem(root: type[BaseModel], path: list[str]) -> str | None:
    """``None`` when ``path`` names a setting under ``root``; else one line saying which part is wrong.

    >>> from components.settings import Profile as P
    >>> key_problem(P, ["evaluation", "benchmark", "0", "limit"])
    'no such key `evaluation.benchmark`; did you mean `evaluation.benchmarks`?'
    >>> key_problem(P, ["evaluation", "benchmarks", "first"])
    '`evaluation.benchmarks` is a list: `first` is not an index (0, 1, ...)'
    >>> key_problem(P, ["evaluation", "benchmarks", "0", "limit"]) is None
    True
    """
    annotations: list = [root]
    for depth, part in enumerate(path):
        where = ".".join(path[: depth + 1])
        above = ".".join(path[:depth])
        outcomes = [_step(annotation, part) for annotation in annotations]
        reached = [a for kind, found in outcomes if kind == "ok" for a in found]
        if reached:
            annotations = reached
            continue
        names = sorted({n for kind, found in outcomes if kind == "name" for n in found})
        if names:
            close = difflib.get_close_matches(part, names, n=1, cutoff=0.6)
            hint = f"; did you mean `{'.'.join([*path[:depth], close[0]])}`?" if close else \
                f" (the keys under `{above or 'the profile'}`: {', '.join(names)})"
            return f"no such key `{where}`{hint}"
        if any(kind == "index" for kind, _ in outcomes):
            return f"`{above}` is a list: `{part}` is not an index (0, 1, ...)"
        return f"`{above}` is a value, it has no key `{part}`"
    return None
