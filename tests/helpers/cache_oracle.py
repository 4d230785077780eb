"""An oracle for cache keys that does not trust the import graph: run stages, watch what each task touched.

``run_audited`` runs stage commands (``flows.commands.run_<command>``) on given
profiles in one fresh interpreter whose ``sitecustomize`` (``tests/helpers/audit_hook``)
records, per Prefect task run, every file opened, every module imported and every
project function that ran, plus the ingredients the run's key recorded.
``gaps`` then names, per task, each project module that ran or was imported and
each data file that was opened (under the given data roots, or shipped in the
project's packages) that its key did not cover. The expected set comes from the
interpreter's audit events, never from ``runtime.cache.task_code``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HOOK_DIR = Path(__file__).resolve().parent / "audit_hook"
PACKAGES = ("components", "runtime", "tasks", "flows", "cli")
KEY_MACHINERY = {  # the modules that compute a key run inside the task's context, but decide no output
    "runtime.cache.policy", "runtime.cache.task_code", "runtime.cache.import_graph", "runtime.cache.file_inputs", "runtime.cache.hub_revisions",
    "runtime.cache.server_libraries", "runtime.cache.settings_walk"}

RUNNER = r'''
import json, sys
from pathlib import Path
from components.config import load_profile_dict
from flows import commands

for step in json.loads(open(sys.argv[1], encoding="utf-8").read()):
    if step.get("edit"):
        path, old, new = step["edit"]
        text = Path(path).read_text(encoding="utf-8")
        if old is not None and old not in text:
            raise SystemExit(f"{path}: {old!r} not found")
        Path(path).write_text(text + new if old is None else text.replace(old, new, 1), encoding="utf-8")
    print(f"=== step {step['name']}", file=sys.stderr, flush=True)
    command, _, stages = step["command"].partition(":")
    may_stop = command.endswith("?")  # a stage that may stop on purpose (a fake teacher's traces all rejected)
    profile = load_profile_dict(step["profile"])
    try:
        if command == "call":  # a function of tests.helpers.oracle_calls, given the profile
            import importlib
            getattr(importlib.import_module("tests.helpers.oracle_calls"), stages)(profile)
        elif stages:
            commands.run_recipe(profile, stages.split(","))
        else:
            getattr(commands, f"run_{command.rstrip('?')}")(profile)
    except Exception as error:
        if not may_stop:
            raise
        print(f"=== stopped: {error}", file=sys.stderr, flush=True)
'''
FINISHED = re.compile(r"Task run '(?P<run>[^']+)' - Finished in state (?P<state>\w+)\(")


def cached_task_names() -> set[str]:
    """The name of every task of ``tasks/`` whose results are cached (a ``runtime.cache.policy.cache_policy`` key)."""
    import importlib

    from prefect.tasks import Task

    from runtime.cache.policy import CheckedArtifacts

    names = set()
    for path in sorted((REPO / "tasks").glob("*.py")):
        module = importlib.import_module(f"tasks.{path.stem}")
        names |= {value.name for value in vars(module).values()
                  if isinstance(value, Task) and isinstance(value.cache_policy, CheckedArtifacts)}
    return names


def run_steps(steps: list[dict], work: Path, audited: bool = False, timeout: int = 1500) -> str:
    """Run steps (``name``, ``command``: a stage command (``…?``: it may stop with an error) or
    ``recipe:<stage>,…`` or ``call:<function of tests.helpers.oracle_calls>``), ``profile``, optional ``edit``:
    ``[path, old, new]``, ``old`` None to append) in one interpreter (one temporary Prefect server); its stderr.
    ``audited``: under the audit hook, its records in ``work/audit``."""
    log = work / "audit"
    log.mkdir(parents=True, exist_ok=True)
    (work / "steps.json").write_text(json.dumps(steps), encoding="utf-8")
    paths = [str(HOOK_DIR), str(REPO)] if audited else [str(REPO)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths), PREFECT_HOME=str(work / ".prefect"),
               HF_HUB_OFFLINE="1", PREFECT_LOGGING_LEVEL="INFO", PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="180")
    if audited:
        env.update(POLYREASON_AUDIT_LOG=str(log), POLYREASON_AUDIT_REPO=str(REPO), POLYREASON_AUDIT_MAIN="1")
    env.pop("PREFECT_API_URL", None)
    # the task states are read from Prefect's console lines: an in-process command earlier in the test session
    # may have left the CLI's quiet level (WARNING) in this process's environment
    env["PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"] = "INFO"
    done = subprocess.run([sys.executable, "-c", RUNNER, str(work / "steps.json")], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)
    (work / "steps.log").write_text(done.stderr, encoding="utf-8")
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
    return done.stderr


def run_audited(cases: list[tuple[str, dict]], work: Path, timeout: int = 1500) -> list[dict]:
    """Run ``(command, profile)`` cases in one audited interpreter; every process's records (``<pid>.json``)."""
    run_steps([{"name": f"case-{i}", "command": c, "profile": p} for i, (c, p) in enumerate(cases)], work,
              audited=True, timeout=timeout)
    return [json.loads(path.read_text(encoding="utf-8")) for path in sorted((work / "audit").glob("*.json"))]


def task_states(stderr: str) -> dict[str, dict[str, list[str]]]:
    """Step name -> task name -> the final state of each of its runs (``Completed``, ``Cached``), from Prefect's
    ``Finished in state`` log lines."""
    states: dict[str, dict[str, list[str]]] = {}
    step = None
    for line in stderr.splitlines():
        if line.startswith("=== step "):
            step = line.removeprefix("=== step ").strip()
            states[step] = {}
        elif step is not None and (found := FINISHED.search(line)):
            task = found["run"].rsplit("-", 1)[0]
            states[step].setdefault(task, []).append(found["state"])
    return states


def project_module(path: str) -> str | None:
    """The project module a source file is (``None`` outside the project's packages)."""
    relative = Path(path)
    try:
        relative = relative.resolve().relative_to(REPO)
    except ValueError:
        return None
    if not relative.parts or relative.parts[0] not in PACKAGES or relative.suffix != ".py":
        return None
    parts = list(relative.with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_data_file(path: str) -> str | None:
    """A non-Python file shipped in the project's packages, repo-relative (``None`` otherwise)."""
    try:
        relative = Path(path).resolve().relative_to(REPO)
    except ValueError:
        return None
    if not relative.parts or relative.parts[0] not in PACKAGES or relative.suffix in (".py", ".pyc"):
        return None
    if "__pycache__" in relative.parts or not Path(path).is_file():
        return None
    return str(relative)


def covered(path: str, files: dict[str, str]) -> bool:
    """Whether the file ``path`` is one of the key's files or lies under one of its directories."""
    target = Path(path).resolve()
    for named in files:
        root = Path(named).resolve()
        if target == root or root in target.parents:
            return True
    return False


def gaps(records: list[dict], data_roots: list[Path]) -> dict[str, list[str]]:
    """Task -> what it touched that its key did not record (see the module docstring); a run without
    recorded ingredients is a gap too. Runs of a child process count for the task that started it, checked
    against the union of that task's keys (a trainer re-validating its job file checks no registry name again:
    ``components.settings.registries.CHECKED_UPSTREAM``, so it imports no registry its key does not cover)."""
    parents = {run["task"] for record in records for run in record["runs"].values() if not run["child"] and run["cached"]}
    runs = [run for record in records for run in record["runs"].values()
            if run["cached"] and (not run["child"] or run["task"] in parents)]
    keys: dict[str, dict] = {}
    for run in runs:
        if run["key"] is not None and "error" not in run["key"]:
            kept = keys.setdefault(run["task"], {"modules": set(), "data": set(), "files": {}, "own": set()})
            kept["modules"] |= set(run["key"]["modules"])
            kept["data"] |= set(run["key"]["data"])
            kept["files"].update(run["key"]["files"])
            kept["own"].add(run["key"]["module"])
    roots = [root.resolve() for root in data_roots]
    found: dict[str, set[str]] = {}
    for run in runs:
        key = keys.get(run["task"])
        if key is None:
            found.setdefault(run["task"], set()).add(f"no key recorded {(run['key'] or {}).get('error', '')}")
            continue
        modules = {m for m in map(project_module, run["ran"]) if m} | {
            m for m in run["imported"] if project_module_name(m)}
        allowed = key["modules"] | key["own"] | KEY_MACHINERY
        for module in sorted(modules - allowed):
            found.setdefault(run["task"], set()).add(f"module {module}")
        for path in run["opened"]:
            shipped = package_data_file(path)
            if shipped is not None and shipped not in key["data"] and not covered(path, key["files"]):
                found.setdefault(run["task"], set()).add(f"package data {shipped}")
            elif shipped is None and any(root in Path(path).resolve().parents for root in roots) \
                    and Path(path).is_file() and not covered(path, key["files"]):
                found.setdefault(run["task"], set()).add(f"file {path}")
    return {task: sorted(items) for task, items in sorted(found.items())}


def project_module_name(name: str) -> bool:
    """Whether an imported module name is one of the project's modules (a file or package under the repo)."""
    parts = name.split(".")
    if parts[0] not in PACKAGES:
        return False
    base = REPO.joinpath(*parts)
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def observed_tasks(records: list[dict]) -> set[str]:
    """The cached tasks that ran in the audited processes (a child process's runs count for its task)."""
    return {run["task"] for record in records for run in record["runs"].values() if run["cached"] and not run["child"]}
