"""Prefect flow run names that read like the MLflow run each flow run opens.

Prefect names a flow run with two random words unless its flow has a
``flow_run_name``: a callable it calls, with no arguments, once the run's
parameters are known (``prefect.runtime.flow_run.parameters``). ``stage_run_name``
builds that callable for a stage flow: the profile and stage (and, for an
evaluation, the evaluated model's tag), then the overrides that changed the
profile (``tracking.run_label``), as ``runtime.tracking.run_title`` names the
MLflow run, less the run id: ``cpu-demo-evaluation-grpo · evaluation.sampling.n=4``.
The entry flows of the Run form are named from their own parameters
(``entry_run_name``): ``cpu-demo-recipe · evaluation.benchmarks.0.limit=8``, unless the
person typed a Run Name in the form: a name that is not Prefect's own (two
lowercase words, ``rare-scallop``) stays.
"""

from __future__ import annotations

import re
from typing import Any, Callable

MAX_NAME = 120
GENERATED = re.compile(r"^[a-z]+-[a-z]+$")  # Prefect's own flow run names: two words from coolname's lists


def _field(value: Any, name: str) -> Any:
    """A field of a parameter as the flow received it: a model, or its JSON (a deployment's parameters)."""
    if value is None:
        return None
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)


def title(stage_name: str, label: str | None) -> str:
    """``stage_name · label``, cut to ``MAX_NAME`` characters.

    >>> title("cpu-demo-grpo", "grpo.max_steps=4")
    'cpu-demo-grpo · grpo.max_steps=4'
    """
    text = " · ".join(part for part in (stage_name, label) if part)
    return text if len(text) <= MAX_NAME else text[: MAX_NAME - 1] + "…"


def stage_title(parameters: dict, stage: str) -> str:
    """The name of a stage flow run with these parameters (see the module docstring).

    >>> stage_title({"profile": {"name": "demo", "tracking": {"run_label": "grpo.beta=0.1"}},
    ...              "model": {"tag": "sft"}}, "evaluation")
    'demo-evaluation-sft · grpo.beta=0.1'
    """
    profile = parameters.get("profile")
    name = _field(profile, "name") or "polyreason"
    label = _field(_field(profile, "tracking"), "run_label")
    if stage == "evaluation":
        stage = f"evaluation-{_field(parameters.get('model'), 'tag') or 'base'}"
    return title(f"{name}-{stage}", label)


def stage_run_name(stage: str) -> Callable[[], str]:
    """The ``flow_run_name`` of a stage flow."""

    def name() -> str:
        from prefect.runtime import flow_run

        return stage_title(dict(flow_run.parameters or {}), stage)

    return name


def entry_title(parameters: dict, command: str) -> str:
    """The name of a Run form flow run: the profile, the command, the overrides as typed.

    >>> entry_title({"profile": "cpu-demo", "overrides": ["evaluation.benchmarks.0.limit=8"]}, "recipe")
    'cpu-demo-recipe · evaluation.benchmarks.0.limit=8'
    """
    profile = _field(parameters.get("advanced_profile"), "name") or parameters.get("profile") or "polyreason"
    return title(f"{profile}-{command}", " ".join(parameters.get("overrides") or []) or None)


def entry_run_name(command: str) -> Callable[[], str]:
    """The ``flow_run_name`` of an entry flow (``flows.entry``) or the nightly."""

    def name() -> str:
        from prefect.runtime import flow_run

        given = flow_run.name
        if given and not GENERATED.match(given):  # typed in the Run form
            return given
        return entry_title(dict(flow_run.parameters or {}), command)

    return name
