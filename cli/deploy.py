"""Deployments on Prefect work pools: the UI's front door, the nightly schedule, and stage placement.

``polyreason deploy`` (against a running Prefect server: ``polyreason up``) registers

* one deployment per CLI command (``recipe``, ``data``, ``sft``, ``grpo``,
  ``evaluate``, ``audit``; the entry flows of ``flows/entry.py``): the Run form
  asks for a profile (drop-down), overrides and optionally a whole profile;
* ``nightly-evaluation/<profile>`` for every profile with a ``nightly`` section whose
  registered model exists on its tracking server (or every one, with
  ``all_nightlies``: ``polyreason deploy --all-nightlies``), on its cron schedule (its line
  says the cron and the next run, in UTC); a nightly of a model nobody registered would
  only fail every night;
* for every profile that places stages on work pools (``placement: {data:
  gpu-inference, grpo: gpu-train}``), the stage flows on those pools
  (``polyreason-data/gpu-inference`` …), which the recipe runs with
  ``run_deployment`` and waits for (a placed evaluation also gets its
  fan-out flow, ``polyreason-evaluation-fanout/<pool>``, which the recipe runs
  there when the profile's ``execution`` fans out).

A command deployment's page is short (``components.override_keys.deployment_description``);
the full list of keys and current values is a markdown file the page names,
``<project>/.polyreason/run-form/<command>-keys.md``.

Deployments run through process work pools: ``polyreason worker --pool NAME``
starts a worker that runs each flow run in its own process, with the job
environment set here (project directory, result storage, tracking server), so a
worker on another machine that mounts the same project directory sees the same
artifacts, results and runs.
"""

from __future__ import annotations

import os
from pathlib import Path

from components.config import load_profile
from components.settings import Profile

REPO = Path(__file__).resolve().parents[1]
COMMAND_ENTRIES = ("recipe", "data", "sft", "grpo", "evaluate", "audit")
STAGE_ENTRIES = {"data": "flows/data.py:data_flow", "sft": "flows/sft.py:sft_flow",
                 "rejection": "flows/rejection.py:rejection_flow", "grpo": "flows/grpo.py:grpo_flow",
                 "evaluation": "flows/evaluation.py:evaluation_flow", "audit": "flows/audit.py:audit_flow"}
# sections a command reads besides those it runs: where its runs are tracked, where the recipe registers its model
ALSO_OVERRIDABLE = {command: ("registry", "tracking") if command == "recipe" else ("tracking",)
                    for command in COMMAND_ENTRIES}
ALSO_PLACED = {"evaluation": ("flows/fanout.py:evaluation_fanout_flow",)}  # the recipe runs it where it evaluates


def job_environment(project: Path, profiles: Path) -> dict[str, str]:
    """What a flow run needs to find the project's state and servers, wherever the worker runs."""
    env = {"POLYREASON_PROJECT_DIR": str(project), "POLYREASON_PROFILES_DIR": str(profiles),
           "PREFECT_RESULTS_LOCAL_STORAGE_PATH": str(project / ".prefect" / "results"),
           "MLFLOW_DISABLE_TELEMETRY": "true", "TOKENIZERS_PARALLELISM": "false"}
    if os.environ.get("MLFLOW_TRACKING_URI"):
        env["MLFLOW_TRACKING_URI"] = os.environ["MLFLOW_TRACKING_URI"]
    return env


def ensure_pools(names: set[str]) -> None:
    """Create the process work pools that do not exist yet."""
    from prefect import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectAlreadyExists

    with get_client(sync_client=True) as client:
        for name in sorted(names):
            try:
                client.create_work_pool(WorkPoolCreate(name=name, type="process"))
            except ObjectAlreadyExists:
                continue


def _deploy(entrypoint: str, name: str, pool: str, env: dict[str, str], **options) -> str:
    """Register one deployment with ``RunnerDeployment.apply``: what ``Flow.deploy`` calls, without the table and
    the advice to use ``.serve`` it prints for every deployment (``polyreason deploy`` prints one line each)."""
    from prefect import Flow

    loaded = Flow.from_source(source=str(REPO), entrypoint=entrypoint)
    deployment = loaded.to_deployment(name=name, work_pool_name=pool, job_variables={"env": env}, **options)
    return f"{loaded.name}/{name} ({deployment.apply(work_pool_name=pool)})"


def profile_keys(command: str, profiles: list[Profile]) -> dict[str, dict[str, str]]:
    """Profile name -> every key of the sections ``command`` runs -> its current value (profiles it cannot run left out)."""
    from components.override_keys import section_keys
    from components.settings import ProfileError
    from flows.commands import sections_for

    keys = {}
    for profile in profiles:
        try:
            keys[profile.name] = section_keys(profile, [*sections_for(command, profile), *ALSO_OVERRIDABLE[command]])
        except ProfileError:  # the profile lacks the section this command needs
            continue
    return keys


def deploy_command(command: str, profiles: list[Profile], pool: str, env: dict[str, str], project: Path) -> str:
    """The Run form's deployment of ``polyreason <command>``: a short page naming the file of every key."""
    from components.override_keys import deployment_description, keys_markdown, overrides_help
    from flows.commands import COMMANDS
    from flows.entry import default_profile

    keys = profile_keys(command, profiles)
    default = default_profile(tuple(sorted(keys)) or ("none",))
    full_list = publish_keys(command, keys_markdown(command, keys), project)
    description = deployment_description(command, COMMANDS[command][1], default, keys.get(default, {}), full_list)
    done = _deploy(f"flows/entry.py:{command}", command, pool, env, description=description)
    describe_overrides(done, overrides_help(default, keys.get(default, {})))
    return done


def publish_keys(command: str, markdown: str, project: Path) -> str:
    """Write the full key list to ``<project>/.polyreason/run-form/<command>-keys.md``; the text naming it.

    A file beside the project's other state (a worker elsewhere mounts the project), not a Prefect artifact:
    Prefect 3.7 deprecates artifacts created outside a flow run.
    """
    path = project / ".polyreason" / "run-form" / f"{command}-keys.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(markdown + "\n", encoding="utf-8")
    return f"`{path}` (written by `polyreason deploy`)"


def describe_overrides(deployed: str, text: str) -> None:
    """Set the ``overrides`` parameter's description in a deployment's parameter schema (what the Run form shows)."""
    from uuid import UUID

    from prefect import get_client
    from prefect.client.schemas.actions import DeploymentUpdate

    deployment_id = UUID(deployed.rsplit("(", 1)[1].rstrip(")"))
    with get_client(sync_client=True) as client:
        schema = client.read_deployment(deployment_id).parameter_openapi_schema
        schema["properties"]["overrides"]["description"] = text
        client.update_deployment(deployment_id, DeploymentUpdate(parameter_openapi_schema=schema))


def profiles_in(folder: Path) -> list[Profile]:
    """The folder's profiles, loaded without trl's checks: deploying trains nothing, and each deployed flow loads
    its profile again when it runs, checking the sections it trains (the same errors, before any work)."""
    return [load_profile(path, trl_checks=()) for path in sorted(folder.glob("*.yaml"))]


def registered(profile: Profile, project: Path) -> bool:
    """Whether the model a profile's nightly re-evaluates is registered on its tracking server."""
    from runtime import tracking
    from runtime.tracking import registry

    names = profile.nightly.models or [(profile.registry.name if profile.registry else None) or profile.name]
    uri = tracking.tracking_uri(profile.tracking, project)
    return bool(registry.nightly_references(uri, names, None, 1))


def nightly_profiles(profiles: list[Profile], project: Path, all_nightlies: bool) -> tuple[list[Profile], list[str]]:
    """The profiles whose nightly is deployed, and the names of those left out (their model is not registered)."""
    chosen = [p for p in profiles if p.nightly is not None and (all_nightlies or registered(p, project))]
    return chosen, [p.name for p in profiles if p.nightly is not None and p not in chosen]


def deploy(project_dir: str | Path, pool: str = "polyreason", profiles_dir: str | Path | None = None,
           all_nightlies: bool = False, done: list[str] | None = None) -> tuple[list[str], list[str]]:
    """Register every deployment (see the module docstring); ``flow/deployment (id)`` lines (appended to
    ``done`` as they are made, so an interrupted deploy can say how far it got) and the nightlies left out."""
    project = Path(project_dir).resolve()
    folder = Path(profiles_dir or os.environ.get("POLYREASON_PROFILES_DIR") or REPO / "profiles").resolve()
    os.environ["POLYREASON_PROFILES_DIR"] = str(folder)  # the entry flows' drop-down reads it when they load
    env = job_environment(project, folder)
    profiles = profiles_in(folder)
    placed = {(stage, where) for p in profiles for stage, where in p.placement.items()}
    ensure_pools({pool} | {where for _, where in placed})
    nightlies, skipped = nightly_profiles(profiles, project, all_nightlies)
    done = [] if done is None else done
    for command in COMMAND_ENTRIES:
        done.append(deploy_command(command, profiles, pool, env, project))
    for p in nightlies:
        deployed = _deploy("flows/nightly.py:nightly_evaluation", p.name, pool, env, cron=p.nightly.cron,
                           parameters={"profile": p.name}, description=f"nightly re-evaluation of {p.name}'s models")
        done.append(f"{deployed}: {schedule_text(p.nightly.cron)}")
    for stage, where in sorted(placed):
        for entry in (STAGE_ENTRIES[stage], *ALSO_PLACED.get(stage, ())):
            done.append(_deploy(entry, where, where, env, description=f"{stage} stage on pool {where}"))
    return done, skipped


def schedule_text(cron: str) -> str:
    """What a nightly's schedule means: its cron line and its next run, in UTC (as Prefect schedules it).

    >>> schedule_text("0 2 * * *").startswith("cron '0 2 * * *' (UTC), next run ")
    True
    """
    import asyncio

    from prefect.server.schemas.schedules import CronSchedule

    (upcoming,) = asyncio.run(CronSchedule(cron=cron, timezone="UTC").get_dates(1))
    return f"cron '{cron}' (UTC), next run {upcoming.strftime('%Y-%m-%d %H:%M')} UTC"


def worker_command(pool: str) -> list[str]:
    """``prefect worker start`` for a process pool, with this interpreter's ``prefect``."""
    import sys

    return [str(Path(sys.executable).parent / "prefect"), "worker", "start", "--pool", pool, "--type", "process"]
