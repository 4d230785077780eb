"""The cockpit as a person runs it, for the end-to-end tests: ``polyreason up``, ``deploy``, workers, ``down``.

Everything goes through the ``polyreason`` command in subprocesses, on free
ports, in a temporary project with a folder of tiny profiles (the tiny
from-config model, MGSM exemplars as traces, one or two steps per stage).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
POLYREASON = [sys.executable, "-m", "cli"]


def tiny_recipe(model: Path, shared_data: Path, name: str, **extra) -> dict:
    tiny = {"model": str(model), "dtype": "float32", "device": "cpu"}
    return {
        "name": name,
        "data": {"languages": ["fr"], "traces": {"from_file": str(shared_data / "mgsm" / "exemplars.json")},
                 "rejection": {"strategy": "unsolved", "per_language": 2, "validation_per_language": 1,
                               "sampling": {"n": 2, "temperature": 1.0, "max_new_tokens": 4, "batch_size": 8}}},
        "sft": {"model": tiny, "template": "chat", "max_length": 192, "max_steps": 2, "save_steps": 1,
                "per_device_train_batch_size": 4, "gradient_checkpointing": False, "cpu_threads": 1},
        "grpo": {"model": {**tiny, "chat": True}, "rewards": [{"name": "accuracy"}], "max_steps": 1,
                 "per_device_train_batch_size": 2, "save_steps": 1, "cpu_threads": 1, "audit": {"enabled": False},
                 "sampling": {"n": 2, "temperature": 1.0, "max_new_tokens": 4}},
        "evaluation": {"model": {**tiny, "chat": True}, "sampling": {"max_new_tokens": 4, "batch_size": 8},
                       "benchmarks": [{"name": "mgsm", "data_dir": str(shared_data / "mgsm"), "languages": ["fr"],
                                       "limit": 1}]},
        "registry": {"name": name, "alias": "candidate"},
        "nightly": {"cron": "0 2 * * *", "alias": "candidate", "latest": 1},
        **extra,
    }


def write_profiles(folder: Path, profiles: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for profile in profiles:
        (folder / f"{profile['name']}.yaml").write_text(yaml.safe_dump(profile), encoding="utf-8")
    return folder


def cli_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "MLFLOW_TRACKING"))}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return {**env, **extra}


def polyreason(*args: str, timeout: float = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*POLYREASON, *args], cwd=REPO, env=env or cli_env(), capture_output=True, text=True,
                          timeout=timeout)


def said(done: subprocess.CompletedProcess, tail: int = 3000) -> str:
    """A failed command's account for an assertion message: its own ``polyreason ...:`` lines first (a temporary
    Prefect server's log lines can arrive after them and push them out of any tail), then the tail of stderr."""
    own = [line for line in done.stderr.splitlines() if line.startswith("polyreason")]
    return "\n".join([f"exit {done.returncode}", *own[-5:], "--- stderr tail ---", done.stderr[-tail:]])


def start_worker(pool: str, project: Path, log: Path, **env: str) -> subprocess.Popen:
    handle = log.open("w")
    return subprocess.Popen([*POLYREASON, "worker", "--pool", pool, "--project-dir", str(project)], cwd=REPO,
                            env=cli_env(**env), stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)


def stop(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        os.killpg(process.pid, signal.SIGKILL)


def run_deployment(api_url: str, name: str, parameters: dict, timeout: float = 600):
    """Start a deployment's flow run through the Prefect API and wait for its final state."""
    from prefect.deployments import run_deployment as start
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: api_url}):
        return start(name, parameters=parameters, timeout=timeout, poll_interval=1)


def run_tree_artifacts(api_url: str, flow_run_id) -> dict[str, list]:
    """The artifacts (by key) of a flow run and of every flow run under it, through the Prefect client."""
    from prefect import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter, ArtifactFilterFlowRunId, FlowRunFilter, FlowRunFilterParentFlowRunId,
    )  # fmt: skip
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: api_url}), get_client(sync_client=True) as client:
        ids, frontier = [flow_run_id], [flow_run_id]
        while frontier:
            children = client.read_flow_runs(flow_run_filter=FlowRunFilter(
                parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=frontier)))
            frontier = [child.id for child in children]
            ids += frontier
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=ids)))
    found: dict[str, list] = {}
    for artifact in artifacts:
        found.setdefault(artifact.key, []).append(artifact)
    return found


class MlflowREST:
    """The few MLflow REST endpoints the assertions need (no client library in between)."""

    def __init__(self, uri: str):
        self.uri = uri.rstrip("/")

    def call(self, endpoint: str, body: dict | None = None, **query) -> dict:
        url = f"{self.uri}/api/2.0/mlflow/{endpoint}" + ("?" + urllib.parse.urlencode(query) if query else "")
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def runs(self, filter_string: str) -> list[dict]:
        experiments = [e["experiment_id"] for e in self.call("experiments/search", {"max_results": 100})["experiments"]]
        body = {"experiment_ids": experiments, "filter": filter_string, "max_results": 100,
                "order_by": ["attributes.start_time DESC"]}
        return [self.run(r["info"]["run_id"]) for r in self.call("runs/search", body).get("runs", [])]

    def run(self, run_id: str) -> dict:
        run = self.call("runs/get", run_id=run_id)["run"]
        run["metrics"] = {m["key"]: m["value"] for m in run["data"].get("metrics", [])}
        run["tags"] = {t["key"]: t["value"] for t in run["data"].get("tags", [])}
        return run

    def version(self, name: str, alias: str) -> dict:
        found = self.call("registered-models/alias", name=name, alias=alias)["model_version"]
        found["tags"] = {t["key"]: t["value"] for t in found.get("tags", [])}
        return found


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")
