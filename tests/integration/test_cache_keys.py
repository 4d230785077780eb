"""A task's cache key follows the code it runs and the libraries of its stage, and nothing else.

In a temporary copy of the project, each project module is edited in turn (a
comment appended) and every cached task's key is computed again: a key changes
exactly when the edited module is one its code can reach (``runtime.task_code``),
so an edit to ``components/extraction.py`` re-scores and an edit to a GRPO reward
keeps the base model's generations. The table of hand-picked edits pins the
cases that matter. A changed version of a library a stage declares changes the
keys of that stage's tasks only. Imports every task module (Prefect) in a
subprocess: ~15 s, hence not a unit test.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("components", "runtime", "tasks", "flows", "cli")
EDIT = "\n# edited by test_cache_keys\n"

EDITS = [  # (file, line after which a comment is inserted, or None: appended; task, whether its key changes)
    ("components/extraction.py", None, "score", True),
    ("components/numbers.py", None, "score", True),
    ("components/verification.py", None, "score", True),
    ("components/metrics/lcpr.py", None, "score", True),
    ("components/extraction.py", None, "generate", False),
    ("components/scoring.py", None, "generate", False),
    ("components/reporting.py", None, "score", False),
    ("components/rewards/pcs.py", None, "generate", False),  # a GRPO reward keeps the base model's generations
    ("components/rewards/pcs.py", None, "grpo-train", True),
    ("components/extraction.py", None, "grpo-train", True),
    ("components/numbers.py", None, "grpo-train", True),
    ("components/data/loaders_local.py", None, "load-benchmark", True),
    ("components/generation/transformers_backend.py", None, "generate", True),
    ("components/generation/transformers_backend.py", None, "score", False),
    ("runtime/artifacts.py", None, "score", True),  # the writer that publishes the product
    ("tasks/evaluation.py", None, "score", False),  # the task module, outside the task's code
    ("tasks/evaluation.py", "def generation_identity(", "generate", True),  # a helper the task calls
    ("tasks/evaluation.py", "def generation_identity(", "score", False),
    ("tasks/evaluation.py", "def score_task(", "score", True),  # the task's own function
]

SCRIPT = r'''
import importlib, json, sys
from pathlib import Path
from types import SimpleNamespace

from prefect.tasks import Task

from runtime.caching import CheckedArtifacts
from runtime.import_graph import PACKAGES, modules_of
from runtime.task_code import task_code

EDIT = sys.argv[1]


def cached_tasks():
    found = {}
    for path in sorted(Path("tasks").glob("*.py")):
        module = importlib.import_module(f"tasks.{path.stem}")
        for value in vars(module).values():
            if isinstance(value, Task) and isinstance(value.cache_policy, CheckedArtifacts):
                found[value.name] = value
    return found


def keys(tasks):
    return {name: task.cache_policy.inner.compute_key(SimpleNamespace(task=task), {}, {}) for name, task in tasks.items()}


def edited(path, after, run):
    original = path.read_text(encoding="utf-8")
    if after is None:
        path.write_text(original + EDIT, encoding="utf-8")
    else:
        lines = original.split("\n")
        at = next(i for i, line in enumerate(lines) if line.startswith(after)) + 1
        while not lines[at - 1].rstrip().endswith(":"):  # after the whole signature
            at += 1
        path.write_text("\n".join(lines[:at] + ["    # edited by test_cache_keys"] + lines[at:]), encoding="utf-8")
    try:
        return run()
    finally:
        path.write_text(original, encoding="utf-8")


tasks = cached_tasks()
base = keys(tasks)
reach = {name: sorted(task_code(task.fn, task.cache_policy.inner.policies[1].stages).modules)
         for name, task in tasks.items()}
paths = modules_of(PACKAGES)
changed = {}
for name in sorted(paths):
    now = edited(paths[name], None, lambda: keys(tasks))
    changed[name] = sorted(task for task in tasks if now[task] != base[task])
picked = [edited(Path(file), after, lambda: keys(tasks))[task] != base[task] for file, after, task in json.loads(sys.argv[2])]
print(json.dumps({"reach": reach, "changed": changed, "picked": picked, "base": base}))
'''


@pytest.fixture(scope="module")
def edited_copy(tmp_path_factory):
    """Every module edited in turn in a copy of the project: what each task reaches and which keys changed."""
    root = tmp_path_factory.mktemp("project")
    for package in PACKAGES:
        shutil.copytree(REPO / package, root / package, ignore=shutil.ignore_patterns("__pycache__"))
    picks = json.dumps([[file, after, task] for file, after, task, _ in EDITS])
    done = subprocess.run([sys.executable, "-c", SCRIPT, EDIT, picks], cwd=root, capture_output=True, text=True,
                          timeout=600, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin",
                                            "PREFECT_HOME": str(root / ".prefect")})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_every_cached_task_is_checked(edited_copy):
    assert {"load-benchmark", "build-prompts", "generate", "score", "report", "sft-train", "grpo-train",
            "data-traces", "data-rejection-sampling", "compare-models"} <= set(edited_copy["reach"])


def test_an_edit_changes_exactly_the_keys_of_the_tasks_that_reach_it(edited_copy):
    reach, changed = edited_copy["reach"], edited_copy["changed"]
    expected = {module: sorted(task for task, modules in reach.items() if module in modules) for module in changed}
    assert {m: c for m, c in changed.items() if c != expected[m]} == {}


@pytest.mark.parametrize("index", range(len(EDITS)), ids=[f"{f.split('/')[-1]}{'@' + a if a else ''}->{t}"
                                                          for f, a, t, _ in EDITS])
def test_picked_edits(edited_copy, index):
    *_, expected = EDITS[index]
    assert edited_copy["picked"][index] is expected


@pytest.mark.parametrize("distribution, task, changes", [
    ("math-verify", "score", True),
    ("lingua-language-detector", "score", True),
    ("math-verify", "generate", False),
    ("transformers", "generate", True),
    ("vllm", "generate", True),
    ("trl", "sft-train", True),
    ("trl", "score", False),
    ("peft", "grpo-final-weights", True),
    ("matplotlib", "report", True),
])
def test_a_declared_library_version_changes_the_key_of_its_stage(monkeypatch, distribution, task, changes):
    from runtime import task_code
    from tasks import evaluation, grpo, sft

    tasks = {t.name: t for t in (evaluation.score_task, evaluation.generate_task, evaluation.report_task,
                                 sft.sft_task, grpo.final_weights_task)}

    def key() -> str:
        return tasks[task].cache_policy.inner.compute_key(SimpleNamespace(task=tasks[task]), {}, {})

    before = key()
    installed = task_code.library_version
    monkeypatch.setattr(task_code, "library_version",
                        lambda name: "999.0" if name == distribution else installed(name))
    assert (key() != before) is changes
