"""A task's cache key covers what the task touches: checked from outside, and pinned by hand-picked edits.

* **The oracle** (slow): every cached task of ``tasks/`` runs on tiny/fake
  profiles in one interpreter under ``tests/helpers/audit_hook`` (``sys.addaudithook``
  for ``open``/``import`` events and a call tracer), which records per task run
  the project modules that ran or were imported and the files opened; each must
  be among the ingredients the run's key recorded (``tests.helpers.cache_oracle``).
  The expected set comes from the interpreter, not from ``runtime.cache.task_code``, and
  a cached task without a run in the oracle's cases fails the coverage test.
* **Hand-picked edits**: in a temporary copy of the project a comment is added to
  one module and the keys are computed again; the table pins the cases that
  matter (an edit to ``components/extraction.py`` re-scores, an edit to a GRPO
  reward keeps the base model's generations).
* A changed version of a library a stage declares changes the keys of that
  stage's tasks only.
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
    ("components/reports/benchmark.py", None, "score", False),
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

from runtime.cache.policy import CheckedArtifacts
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
picked = [edited(Path(file), after, lambda: keys(tasks))[task] != base[task] for file, after, task in json.loads(sys.argv[2])]
print(json.dumps({"picked": picked, "base": base}))
'''


@pytest.fixture(scope="module")
def edited_copy(tmp_path_factory):
    """The hand-picked edits, each in turn in a copy of the project: whether the task's key changed."""
    root = tmp_path_factory.mktemp("project")
    for package in PACKAGES:
        shutil.copytree(REPO / package, root / package, ignore=shutil.ignore_patterns("__pycache__"))
    picks = json.dumps([[file, after, task] for file, after, task, _ in EDITS])
    done = subprocess.run([sys.executable, "-c", SCRIPT, EDIT, picks], cwd=root, capture_output=True, text=True,
                          timeout=600, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin",
                                            "PREFECT_HOME": str(root / ".prefect")})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def oracle_cases(data: Path, model: Path, project: Path, uri: str) -> list[tuple[str, dict]]:
    """Stage commands on tiny/fake profiles that, together, run every cached task once."""
    tiny = {"model": str(model), "dtype": "float32", "device": "cpu"}
    fake = {"backend": "fake", "model": "fake"}
    tracking = {"tracking_uri": uri, "experiment": "oracle"}
    mgsm = {"name": "mgsm", "data_dir": str(data / "mgsm"), "languages": ["en", "fr"], "limit": 2}
    search = {"retrieval": {"retriever": "bm25", "top_k": 1, "passage_chars": 100}, "max_searches": 1,
              "max_turn_tokens": 16, "max_information_tokens": 48}
    evaluation = {"model": fake, "sampling": {"n": 1, "max_new_tokens": 8},
                  "prompt": {"style": "few_shot", "num_shots": 1, "exemplars_path": str(data / "exemplars.json")},
                  "benchmarks": [mgsm],
                  "scoring": {"verifier": "trusted", "lcpr_rule": "lcb", "words_path": str(data / "words"),
                              "in_domain": ["fr"]}}
    recipe = {
        "data": {"languages": ["en", "fr"], "traces": {"from_file": str(data / "mgsm" / "exemplars.json")},
                 "rejection": {"strategy": "unsolved", "prompt": {"style": "instruction"}, "per_language": 2,
                               "validation_per_language": 1,
                               "sampling": {"n": 2, "temperature": 1.0, "max_new_tokens": 4, "batch_size": 16}}},
        "sft": {"model": tiny, "template": "chat", "max_length": 128, "max_steps": 1, "save_steps": 1,
                "per_device_train_batch_size": 2, "gradient_checkpointing": False, "cpu_threads": 1,
                "accelerate_config": str(data / "launch.yaml")},
        "grpo": {"model": {**tiny, "chat": True}, "rewards": [{"name": "accuracy"}], "max_steps": 1,
                 "per_device_train_batch_size": 4, "save_steps": 1, "cpu_threads": 1,
                 "audit": {"enabled": True, "verifier": "exact", "sample_size": 2, "num_generations": 2},
                 "sampling": {"n": 2, "temperature": 1.0, "max_new_tokens": 4}},
        "evaluation": {"model": {**tiny, "chat": True}, "sampling": {"max_new_tokens": 4, "batch_size": 8},
                       "benchmarks": [{**mgsm, "limit": 1}]},
        "registry": {"name": "oracle", "alias": "candidate", "merged": True},
    }
    lcrl = {"model": {**tiny, "chat": False}, "prompt": {"style": "plain"},
            "rewards": [{"name": "lcrl", "params": {"answer_metric": "c3recall"}}],
            "coupling": {"mode": "language", "baseline": "group", "key": "id", "languages": ["en", "fr"]},
            "lcrl": {"dataset": {"name": "offline_qa", "languages": ["en", "fr"], "limit": 1},
                     "retrieval": {"retriever": "bm25", "top_k": 1, "passage_chars": 100}, "rounds": [["query"]],
                     "max_searches": 1, "max_turn_tokens": 8, "max_information_tokens": 32},
            "beta": 0.0, "max_steps": 1, "per_device_train_batch_size": 4, "save_steps": 1, "cpu_threads": 1,
            "sampling": {"n": 2, "temperature": 1.0, "max_new_tokens": 24, "seed": 0}, "audit": {"enabled": False}}
    source = {"path": str(data / "msvamp" / "test_English.json"), "question_column": "m_query",
              "answer_column": "response", "benchmark": "msvamp", "limit": 2,
              "reference_path": str(data / "msvamp" / "test_{language}.json"), "reference_column": "m_query"}
    data_only = {"languages": ["en", "fr"], "source": source,
                 "translation": {"model": fake, "sampling": {"max_new_tokens": 8}},
                 "traces": {"model": fake, "sampling": {"max_new_tokens": 8}, "prompt": {"style": "plain"},
                            "lcpr_rule": "lcb", "words_path": str(data / "words")}}
    qa = {"model": {**tiny, "chat": False}, "sampling": {"n": 1, "max_new_tokens": 8}, "prompt": {"style": "plain"},
          "benchmarks": [{"name": "offline_qa", "languages": ["en"], "limit": 2}], "search": search}
    return [
        ("evaluate", {"name": "oracle-evaluation", "project_dir": str(project), "tracking": tracking,
                      "evaluation": evaluation}),
        ("evaluate", {"name": "oracle-search", "project_dir": str(project), "tracking": tracking, "evaluation": qa}),
        ("audit", {"name": "oracle-audit", "project_dir": str(project), "tracking": tracking,
                   "evaluation": {**evaluation, "prompt": {"style": "instruction"}},
                   "audit": {"stress_golds": ["18"], "stress_languages": ["en", "fr"]}}),
        ("recipe", {"name": "oracle-recipe", "project_dir": str(project), "tracking": tracking, **recipe}),
        ("grpo", {"name": "oracle-lcrl", "project_dir": str(project), "tracking": tracking, "grpo": lcrl}),
        ("data?", {"name": "oracle-data", "project_dir": str(project), "tracking": tracking, "data": data_only}),
        ("call:traces", {"name": "oracle-traces", "project_dir": str(project), "tracking": tracking,
                         "data": {**data_only, "traces": {**data_only["traces"], "verifier": "exact", "per_language": 2,
                                                          "early_stop": {"probe_per_language": 1, "min_share": 0.01}}}}),
    ]


@pytest.fixture(scope="module")
def oracle(shared_data, tiny_model_dir, tmp_path_factory):
    """Every oracle case run once under the audit hook: the records and the data folder the profiles name."""
    from tests.helpers.cache_oracle import run_audited

    work = tmp_path_factory.mktemp("oracle")
    data = work / "data"
    shutil.copytree(shared_data / "mgsm", data / "mgsm", ignore=shutil.ignore_patterns("mgsm_[!ef]*"))
    shutil.copytree(shared_data / "msvamp", data / "msvamp")
    shutil.copy(shared_data / "mgsm" / "exemplars.json", data / "exemplars.json")
    shutil.copy(shared_data / "language_confusion" / "words", data / "words")
    shutil.copy(REPO / "components" / "training" / "accelerate" / "cpu.yaml", data / "launch.yaml")
    cases = oracle_cases(data, tiny_model_dir, work / "project", f"sqlite:///{work}/mlflow.db")
    return run_audited(cases, work, timeout=1800), data


@pytest.mark.slow
def test_every_cached_task_runs_in_an_oracle_case(oracle):
    from tests.helpers.cache_oracle import cached_task_names, observed_tasks

    records, _ = oracle
    assert sorted(cached_task_names() - observed_tasks(records)) == []


@pytest.mark.slow
def test_every_module_and_file_a_cached_task_touched_is_in_its_key(oracle):
    from tests.helpers.cache_oracle import gaps

    records, data = oracle
    assert gaps(records, [data]) == {}


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
    from runtime.cache import task_code
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
