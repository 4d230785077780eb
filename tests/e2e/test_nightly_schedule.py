"""End-to-end: a nightly re-evaluation really runs on its schedule, from ``polyreason up`` to a dated MLflow run.

A real Prefect server and MLflow server (``polyreason up`` on free ports, asked for with port 0), a tiny model
registered in MLflow's registry, ``polyreason deploy`` with a profile whose nightly cron fires every minute, and a
``polyreason worker``: Prefect's scheduler must create the SCHEDULED run by itself (nothing here starts it), the
worker must execute it, and the evaluation it logs must carry the day and the registered version. The Prefect
server's own log must hold no scheduler error (nor any other, but for Prefect's best-effort bookkeeping writes that
SQLite refuses under contention: ``bookkeeping``). A second profile with a nightly but no
registered model gets no nightly deployment.
"""

from __future__ import annotations

import datetime
import json
import re

import pytest

from cli.stack_launch import alive
from tests.helpers.cockpit import (
    MlflowREST, polyreason, start_worker, stop, tiny_recipe, wait_for, write_profiles,
)  # fmt: skip

pytestmark = pytest.mark.slow
EVERY_MINUTE = "* * * * *"
# an error line of the server's log (Prefect's docket logs each failed attempt of a background task as ERROR)
ERROR_LINE = re.compile(r"^\S+ \| ERROR +\| (?P<logger>\S+) - (?P<text>.*)$", re.M)


def bookkeeping(logger: str, text: str) -> bool:
    """Prefect 3.7's best-effort status writes that SQLite in WAL mode can refuse when another writer got in
    first (a read transaction's late write: SQLITE_BUSY_SNAPSHOT, which no busy timeout waits out): a retried
    attempt (``↩``) of ``mark_deployments_ready``, a worker heartbeat the next beat writes again. Only a
    PostgreSQL database avoids them; nothing else may fail."""
    return (logger == "docket.dependencies" and text.startswith("↩") and "mark_deployments_ready" in text) or (
        logger == "prefect.server.utilities.worker_channel" and "heartbeat persistence failed" in text)


def server_errors(log: str) -> list[str]:
    """The server's error lines other than Prefect's best-effort bookkeeping under SQLite contention."""
    return [m.group(0) for m in ERROR_LINE.finditer(log) if not bookkeeping(m.group("logger"), m.group("text"))]


def register_tiny_model(mlflow_uri: str, model_dir, work, name: str) -> str:
    """Register the tiny model (full weights) as version 1 of ``name`` with alias ``candidate``, as a recipe does."""
    from runtime import tracking
    from runtime.tracking import registry

    client = tracking.client(mlflow_uri)
    experiment = client.create_experiment("registered-by-test")
    run = client.create_run(experiment)
    folder = registry.write_model_dir(work / "registered", str(model_dir), "full", {"base": str(model_dir)})
    ref = tracking.RunRef(mlflow_uri, run.info.run_id, experiment)
    registered = registry.register_model(ref, name, "candidate", folder, {"polyreason.kind": "full"})
    client.set_terminated(run.info.run_id)
    return registered.uri


def scheduled_runs(api: str, deployment_name: str) -> list:
    from prefect import get_client
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: api}), get_client(sync_client=True) as client:
        deployment = client.read_deployment_by_name(deployment_name)
        return client.read_flow_runs(deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[deployment.id])))


def deployment_names(api: str) -> list[str]:
    from prefect import get_client
    from prefect.client.schemas.sorting import DeploymentSort
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: api}), get_client(sync_client=True) as client:
        return [d.name for d in client.read_deployments(sort=DeploymentSort.NAME_ASC)]


def pause(api: str, deployment_id) -> bool:
    """Pause the deployment (Prefect deletes its future scheduled runs): one nightly is enough here."""
    from prefect import get_client
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: api}), get_client(sync_client=True) as client:
        client.pause_deployment(deployment_id)
    return True


@pytest.fixture
def project(tmp_path, tiny_model_dir, shared_data):
    profiles = write_profiles(tmp_path / "profiles", [
        tiny_recipe(tiny_model_dir, shared_data, "tiny-nightly", nightly={"cron": EVERY_MINUTE, "latest": 1}),
        tiny_recipe(tiny_model_dir, shared_data, "never-registered", nightly={"cron": EVERY_MINUTE})])
    project = tmp_path / "project"
    started = polyreason("up", "--project-dir", str(project), "--prefect-port", "0", "--mlflow-port", "0", timeout=300)
    assert started.returncode == 0, started.stdout + started.stderr
    state = json.loads((project / ".polyreason" / "stack.json").read_text())
    assert all(url in started.stdout for url in (state["prefect_url"], state["mlflow_url"]))
    assert not state["prefect_url"].endswith(":0") and not state["mlflow_url"].endswith(":0")
    worker = None
    try:
        worker = start_worker("polyreason", project, tmp_path / "worker.log",
                              PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL="INFO")  # what it submits, if a check fails
        yield {"root": tmp_path, "project": project, "profiles": profiles, "state": state,
               "api": f"{state['prefect_url']}/api", "mlflow": state["mlflow_url"]}
    finally:
        if worker is not None:
            stop(worker)
        stopped = polyreason("down", "--project-dir", str(project), timeout=120)
        assert stopped.returncode == 0, stopped.stderr
        assert not any(alive(pid) for pid in state["pids"].values()), "a server outlived polyreason down"


def test_the_scheduler_creates_the_nightly_run_a_worker_executes_it_and_mlflow_holds_its_dated_evaluation(
        project, tiny_model_dir):
    reference = register_tiny_model(project["mlflow"], tiny_model_dir, project["root"], "tiny-nightly")
    deployed = polyreason("deploy", "--project-dir", str(project["project"]), "--profiles-dir",
                          str(project["profiles"]), timeout=300)
    assert deployed.returncode == 0, deployed.stdout + deployed.stderr
    lines = deployed.stdout.splitlines()
    assert sum(line.startswith("deployed ") for line in lines) == 7 and len(lines) == 9, deployed.stdout
    assert "nightly-evaluation/tiny-nightly" in deployed.stdout and "never-registered" in lines[-2]
    assert "process work pool" not in deployed.stdout and not deployed.stderr.strip()  # no library chatter
    assert "never-registered" not in deployment_names(project["api"])
    assert deployment_names(project["api"])[:10].count("recipe") == 1  # the deployments list's first page

    runs: list = []
    wait_for(lambda: runs.extend(r for r in scheduled_runs(project["api"], "nightly-evaluation/tiny-nightly")
                                 if r.state_type.value == "SCHEDULED") or runs, 75, "the scheduler's first run")
    first = min(runs, key=lambda r: r.expected_start_time)
    assert first.auto_scheduled and first.parameters == {"profile": "tiny-nightly"}

    paused: list[bool] = []

    def finished():
        run = next(r for r in scheduled_runs(project["api"], "nightly-evaluation/tiny-nightly") if r.id == first.id)
        if run.state_type.value != "SCHEDULED" and not paused:  # the worker took it: no next minute's run
            paused.append(pause(project["api"], run.deployment_id))
        return run if run.state_type.value in ("COMPLETED", "FAILED", "CRASHED") else None

    worker_log = project["root"] / "worker.log"
    wait_for(finished, 240, f"the worker to run the scheduled nightly {first.id}; see {worker_log}")
    done, worker_log = finished(), worker_log.read_text()
    assert done.state_type.value == "COMPLETED", f"{done.state.message}\n{worker_log[-3000:]}"

    day = done.start_time.astimezone(datetime.timezone.utc).strftime("%Y-%m-%d")
    mlflow = MlflowREST(project["mlflow"])
    evaluations = mlflow.runs(f"tags.`polyreason.nightly` = '{day}'")
    assert evaluations and {r["tags"]["polyreason.registered"] for r in evaluations} == {reference}
    assert all(any(key.endswith("mgsm/fr/accuracy") for key in r["metrics"]) for r in evaluations)
    version = mlflow.call("model-versions/get", name="tiny-nightly", version="1")["model_version"]
    tags = {t["key"]: t["value"] for t in version["tags"]}
    assert tags["polyreason.nightly.last_run"] == tags[f"polyreason.nightly.{day}"]
    assert tags["polyreason.nightly.last_run"] in {r["info"]["run_id"] for r in evaluations}

    server_log = (project["project"] / ".polyreason" / "logs" / "prefect.log").read_text()
    assert "bulk DML" not in server_log  # the scheduler's failure under SQLAlchemy 2.1
    assert server_errors(server_log) == []  # the scheduler's errors included
