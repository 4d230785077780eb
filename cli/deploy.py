"""Deployments on Prefect work pools: the UI's front door, the nightly schedule, and stage placement.

``polyreason deploy`` (against a running Prefect server: ``polyreason up``) registers

* one deployment per CLI command (``recipe``, ``data``, ``sft``, ``grpo``,
  ``evaluate``, ``audit``; the entry flows of ``flows/entry.py``): the Run form
  asks for a profile (drop-down), overrides and optionally a whole profile;
* ``nightly-evaluation/<profile>`` for every profile with a ``nightly`` section, on
  its cron schedule;
* for every profile that places stages on work pools (``placement: {data:
  gpu-inference, grpo: gpu-train}``), the stage flows on those pools
  (``polyreason-data/gpu-inference`` …), which the recipe runs with
  ``run_deployment`` and waits for (a placed evaluation also gets its
  fan-out flow, ``polyreason-evaluation-fanout/<pool>``, which the recipe runs
  there when the profile's ``execution`` fans out).

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
    from prefect import Flow

    loaded = Flow.from_source(source=str(REPO), entrypoint=entrypoint)
    deployment_id = loaded.deploy(name=name, work_pool_name=pool, job_variables={"env": env}, build=False,
                                  push=False, print_next_steps=False, **options)
    return f"{loaded.name}/{name} ({deployment_id})"


def profile_keys(command: str, profiles: list[Profile]) -> dict[str, dict[str, str]]:
    """Profile name -> every key of the sections ``command`` runs -> its current value (profiles it cannot run left out)."""
    from components.run_form import section_keys
    from components.settings import ProfileError
    from flows.commands import sections_for

    keys = {}
    for profile in profiles:
        try:
            keys[profile.name] = section_keys(profile, sections_for(command, profile))
        except ProfileError:  # the profile lacks the section this command needs
            continue
    return keys


def deploy_command(command: str, profiles: list[Profile], pool: str, env: dict[str, str]) -> str:
    """The Run form's deployment of ``polyreason <command>``, described with the keys the profiles have."""
    from components.run_form import deployment_description, overrides_help
    from flows.commands import COMMANDS
    from flows.entry import default_profile

    keys = profile_keys(command, profiles)
    default = default_profile(tuple(sorted(keys)) or ("none",))
    done = _deploy(f"flows/entry.py:{command}", command, pool, env,
                   description=deployment_description(command, COMMANDS[command][1], keys))
    describe_overrides(done, overrides_help(default, keys.get(default, {})))
    return done


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
    return [load_profile(path) for path in sorted(folder.glob("*.yaml"))]


def deploy(project_dir: str | Path, pool: str = "polyreason", profiles_dir: str | Path | None = None) -> list[str]:
    """Register every deployment (see the module docstring); returns ``flow/deployment (id)`` lines."""
    project = Path(project_dir).resolve()
    folder = Path(profiles_dir or os.environ.get("POLYREASON_PROFILES_DIR") or REPO / "profiles").resolve()
    os.environ["POLYREASON_PROFILES_DIR"] = str(folder)  # the entry flows' drop-down reads it when they load
    env = job_environment(project, folder)
    profiles = profiles_in(folder)
    placed = {(stage, where) for p in profiles for stage, where in p.placement.items()}
    ensure_pools({pool} | {where for _, where in placed})
    done = [deploy_command(command, profiles, pool, env) for command in COMMAND_ENTRIES]
    done += [_deploy("flows/nightly.py:nightly_evaluation", p.name, pool, env, cron=p.nightly.cron,
                     parameters={"profile": p.name}, description=f"nightly re-evaluation of {p.name}'s models")
             for p in profiles if p.nightly is not None]
    done += [_deploy(entry, where, where, env, description=f"{stage} stage on pool {where}")
             for stage, where in sorted(placed) for entry in (STAGE_ENTRIES[stage], *ALSO_PLACED.get(stage, ()))]
    return done


def worker_command(pool: str) -> list[str]:
    """``prefect worker start`` for a process pool, with this interpreter's ``prefect``."""
    import sys

    return [str(Path(sys.executable).parent / "prefect"), "worker", "start", "--pool", pool, "--type", "process"]
