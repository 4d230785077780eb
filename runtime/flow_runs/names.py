"""Prefect flow run names that read like the MLflow run each flow run opens.

Prefect names a flow run with two random words unless its flow has a
``flow_run_name``: a callable it calls, with no arguments, once the run's
parameters are known (``prefect.runtime.flow_run.parameters``). ``stage_run_name``
builds that callable for a stage flow: the profile and stage (and, for an
evaluation, the evaluated model's tag), then the overrides that changed the
profile (``tracking.run_label``), as ``runtime.tracking.run_title`` names the
MLflow run, less the run id: ``grpo evaluation · cpu-demo · evaluation.sampling.n=4``.
What tells runs apart comes first (``subject``: the stage, an evaluation's model before
it), so the names stay distinct in a table column that shows only their first dozen
characters; the profile follows. The entry flows of the Run form are named from their own
parameters (``entry_run_name``): ``recipe · cpu-demo · evaluation.benchmarks.0.limit=8``,
unless the person typed a Run Name in the form. A name Prefect made up is replaced: the
server's (two lowercase words, ``rare-scallop``) and the Run form's (a Greek letter with a
number and a star: ``epsilon4-enif``, ``rho56-delos``); any other name was typed and stays.
"""

from __future__ import annotations

import re
from typing import Any, Callable

MAX_NAME = 120
GENERATED = re.compile(r"^[a-z]+[0-9]*-[a-z]+[0-9]*$")  # Prefect's names: the server's two words, the UI's letter+star


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


def subject(stage: str, profile: str, model_tag: str | None = None) -> str:
    """What a run is, the part that differs between runs first: ``sft · demo``, ``grpo evaluation · demo``.

    >>> subject("sft", "cpu-demo"), subject("evaluation", "cpu-demo", "grpo")
    ('sft · cpu-demo', 'grpo evaluation · cpu-demo')
    """
    return f"{model_tag} {stage} · {profile}" if model_tag else f"{stage} · {profile}"


def is_generated(name: str | None) -> bool:
    """Whether ``name`` is one Prefect made up (see the module docstring), not one a person typed.

    >>> [is_generated(n) for n in ("rare-scallop", "epsilon4-enif", "rho56-delos", "xi-aso", "my run", "lr-2e5")]
    [True, True, True, True, False, False]
    """
    return bool(name) and GENERATED.match(name) is not None


def stage_title(parameters: dict, stage: str) -> str:
    """The name of a stage flow run with these parameters (see the module docstring); an evaluation's ``title``
    parameter, when given (a nightly's), names it instead.

    >>> stage_title({"profile": {"name": "demo", "tracking": {"run_label": "grpo.beta=0.1"}},
    ...              "model": {"tag": "sft"}}, "evaluation")
    'sft evaluation · demo · grpo.beta=0.1'
    """
    profile = parameters.get("profile")
    name = _field(profile, "name") or "polyreason"
    label = _field(_field(profile, "tracking"), "run_label")
    if parameters.get("title"):
        return title(parameters["title"], label)
    tag = (_field(parameters.get("model"), "tag") or "base") if stage == "evaluation" else None
    return title(subject(stage, name, tag), label)


def stage_run_name(stage: str) -> Callable[[], str]:
    """The ``flow_run_name`` of a stage flow."""

    def name() -> str:
        from prefect.runtime import flow_run

        return stage_title(dict(flow_run.parameters or {}), stage)

    return name


def entry_title(parameters: dict, command: str) -> str:
    """The name of a Run form flow run: the command, the profile, the overrides as typed.

    >>> entry_title({"profile": "cpu-demo", "overrides": ["evaluation.benchmarks.0.limit=8"]}, "recipe")
    'recipe · cpu-demo · evaluation.benchmarks.0.limit=8'
    """
    profile = _field(parameters.get("advanced_profile"), "name") or parameters.get("profile") or "polyreason"
    return title(subject(command, profile), " ".join(parameters.get("overrides") or []) or None)


def entry_run_name(command: str) -> Callable[[], str]:
    """The ``flow_run_name`` of an entry flow (``flows.entry``) or the nightly (renamed once it knows its versions:
    ``nightly_title``)."""

    def name() -> str:
        from prefect.runtime import flow_run

        given = flow_run.name
        if given and not is_generated(given):  # typed in the Run form
            return given
        return entry_title(dict(flow_run.parameters or {}), command)

    return name


def nightly_title(references: list[str], day: str, profile: str) -> str:
    """A nightly flow run's name once it knows the versions it evaluates: model, versions, date.

    >>> nightly_title(["models:/demo/1", "models:/demo/2", "models:/other/4"], "2026-12-05", "cpu-demo")
    'demo v1, v2, other v4 nightly 2026-12-05'
    >>> nightly_title([], "2026-12-05", "cpu-demo")
    'nightly 2026-12-05 · cpu-demo: no registered version'
    """
    if not references:
        return f"nightly {day} · {profile}: no registered version"
    versions: dict[str, list[str]] = {}
    for reference in references:
        name, _, version = reference.removeprefix("models:/").rpartition("/")
        versions.setdefault(name, []).append(f"v{version}")
    return title(f"{', '.join(f'{name} ' + ', '.join(found) for name, found in versions.items())} nightly {day}",
                 None)


def rename_flow_run(name: str) -> None:
    """Rename the current flow run (its page and the runs table show the new name); nothing outside one."""
    from prefect import get_client
    from prefect.runtime import flow_run

    if not flow_run.get_id():
        return
    with get_client(sync_client=True) as client:
        client.update_flow_run(flow_run.get_id(), name=name)
