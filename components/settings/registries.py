"""What the settings ask of the packages whose names a profile uses, handed to them rather than looked up.

A profile names entries of other packages' registries: a backend, a verifier, a
benchmark, a reward and its factory's keyword parameters, a rejection strategy, an
LCPR rule, a retriever, a shipped accelerate config, a packaged data set (and where it
lies), the languages of a stress table.
The settings check those names when a value is validated, but they import nothing
of ours (a leaf: every package can import its settings), so the answers come through
the ``Registries`` interface below, implemented over the real registries by
``components.catalog``. A validation gets its registries in one of two ways:

* handed in the validation context (pydantic passes ``context`` to every validator of
  the tree): ``Profile.model_validate(data, context={REGISTRIES: registries})``;
* otherwise the ones installed for the process (``use_registries``): each entry point
  of ours installs them before any profile is read (the command line, the flows, which
  Prefect's own parameter validation runs in, the tests), because a flow's typed
  parameters are validated by Prefect, which passes no context.

A validation with neither is refused with a ``LookupError`` naming what to install,
rather than letting an unchecked name through. A process that validates only what its
parent wrote after checking it (the trainer reading its job file, a generation worker
its work file) installs ``CHECKED_UPSTREAM``: the names were checked when the profile
loaded, and importing every registry there would only widen the code its tasks'
cache keys cover.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

REGISTRIES = "polyreason_registries"  # validation-context key: the Registries this validation checks names with
KINDS = ("backend", "verifier", "benchmark", "reward", "rejection strategy", "LCPR rule", "retriever",
         "accelerate config", "packaged data set")  # the kinds of name ``check`` knows


class Registries(Protocol):
    """The answers the settings need from the registries."""

    def check(self, kind: str, name: str) -> str:
        """``name`` when it is registered for ``kind`` (one of ``KINDS``); ``ValueError`` naming the known ones."""

    def reward_problems(self, name: str, params: Mapping[str, Any]) -> list[str]:
        """An unknown reward, parameters its factory does not take or refuses together, a range it cannot state."""

    def benchmark_kind(self, name: str) -> str:
        """``math`` or ``qa``: the metric table a registered benchmark is scored with."""

    def stress_table_languages(self, path: str | None) -> Sequence[str]:
        """The languages of a stress table (``None``: the packaged one); ``OSError``/``ValueError`` when unreadable."""

    def packaged_directory(self, name: str) -> str:
        """The directory of the packaged data set ``name`` (a ``packaged:<set>`` path's set), checked first."""


class CheckedUpstream:
    """The registries of a process validating a file its parent wrote from a checked profile: names pass as given."""

    def check(self, kind: str, name: str) -> str:
        return name

    def reward_problems(self, name: str, params: Mapping[str, Any]) -> list[str]:
        return []

    def benchmark_kind(self, name: str) -> str:
        raise LookupError(f"benchmark {name!r}: this process validates its parent's checked settings and knows no "
                          "benchmark registry")

    def stress_table_languages(self, path: str | None) -> Sequence[str]:
        raise LookupError("this process validates its parent's checked settings and reads no stress table")

    def packaged_directory(self, name: str) -> str:
        raise LookupError(f"packaged data set {name!r}: this process validates its parent's checked settings, whose "
                          "paths were resolved before it started")


CHECKED_UPSTREAM = CheckedUpstream()
_installed: list[Registries] = []


def use_registries(registries: Registries) -> None:
    """Install ``registries`` for every later validation of this process that is handed none."""
    _installed[:] = [registries]


def registries_for(context: Mapping[str, Any] | None = None) -> Registries:
    """The registries a validation with ``context`` checks names with (see the module docstring)."""
    handed = (context or {}).get(REGISTRIES)
    if handed is not None:
        return handed
    if not _installed:
        raise LookupError("the settings were handed no registries to check names with: install them first "
                          "(components.catalog.install(), as the command line, the flows and the tests do)")
    return _installed[0]
