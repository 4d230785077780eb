"""End-to-end: editing a file a task reads re-runs exactly the tasks that read it (and what their new output
feeds); every other task of the run is ``Cached``.

One interpreter (one temporary Prefect server, a local MLflow store) runs an
evaluation with the fake backend on copies of the offline MGSM and MMATH files,
a few-shot exemplar file and the LCB word list, and a data + SFT stage on a tiny
model with an accelerate config of the profile's own; then edits, in turn, a
gold answer of MGSM, the exemplar file, the word list and the accelerate config,
running the stage again after each. Which task runs were ``Cached`` is read from
Prefect's own ``Finished in state`` lines.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers.cache_oracle import run_steps, task_states

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def evaluation_profile(data: Path, project: Path, tracking_uri: str) -> dict:
    return {
        "name": "fresh-evaluation", "project_dir": str(project),
        "tracking": {"tracking_uri": tracking_uri, "experiment": "fresh"},
        "evaluation": {
            "model": {"backend": "fake", "model": "fake"}, "sampling": {"n": 1, "max_new_tokens": 8},
            "prompt": {"style": "few_shot", "num_shots": 1, "exemplars_path": str(data / "prompt" / "exemplars.json")},
            "benchmarks": [{"name": "mgsm", "data_dir": str(data / "mgsm"), "languages": ["en"], "limit": 2},
                           {"name": "mmath", "data_dir": str(data / "mmath"), "languages": ["en"], "limit": 2}],
            "scoring": {"verifier": "trusted", "lcpr_rule": "lcb", "words_path": str(data / "words"),
                        "in_domain": ["en"]},
        },
    }


def sft_profile(data: Path, model: Path, project: Path, tracking_uri: str) -> dict:
    return {
        "name": "fresh-sft", "project_dir": str(project),
        "tracking": {"tracking_uri": tracking_uri, "experiment": "fresh"},
        "data": {"languages": ["en", "fr"], "traces": {"from_file": str(data / "mgsm" / "exemplars.json")}},
        "sft": {"model": {"model": str(model), "dtype": "float32", "device": "cpu"}, "template": "chat",
                "max_length": 128, "max_steps": 1, "save_steps": 1, "per_device_train_batch_size": 2,
                "gradient_checkpointing": False, "cpu_threads": 1, "accelerate_config": str(data / "launch.yaml")},
    }


@pytest.fixture(scope="module")
def states(shared_data, tiny_model_dir, tmp_path_factory):
    work = tmp_path_factory.mktemp("fresh")
    data = work / "data"
    shutil.copytree(shared_data / "mgsm", data / "mgsm", ignore=shutil.ignore_patterns("mgsm_[!ef]*"))
    shutil.copytree(shared_data / "mmath", data / "mmath", ignore=shutil.ignore_patterns("[!e]*"))
    (data / "prompt").mkdir()
    shutil.copy(shared_data / "mgsm" / "exemplars.json", data / "prompt" / "exemplars.json")
    shutil.copy(shared_data / "language_confusion" / "words", data / "words")
    shutil.copy(REPO / "components" / "training" / "accelerate" / "cpu.yaml", data / "launch.yaml")
    uri = f"sqlite:///{work}/mlflow.db"
    evaluation = evaluation_profile(data, work / "project", uri)
    sft = sft_profile(data, tiny_model_dir, work / "project", uri)
    steps = [
        {"name": "first evaluation", "command": "evaluate", "profile": evaluation},
        {"name": "first sft", "command": "recipe:data,sft", "profile": sft},
        {"name": "gold edited", "command": "evaluate", "profile": evaluation,
         "edit": [str(data / "mgsm" / "mgsm_en.tsv"), "\t18\n", "\t19\n"]},
        {"name": "exemplar edited", "command": "evaluate", "profile": evaluation,
         "edit": [str(data / "prompt" / "exemplars.json"), "Roger started with 5 balls.", "Roger had 5 balls."]},
        {"name": "word list edited", "command": "evaluate", "profile": evaluation,
         "edit": [str(data / "words"), None, "\nzzyzx\n"]},
        {"name": "accelerate config edited", "command": "recipe:data,sft", "profile": sft,
         "edit": [str(data / "launch.yaml"), None, "\n# edited: same launch, other bytes\n"]},
    ]
    return task_states(run_steps(steps, work))


def test_a_first_run_runs_every_task(states):
    assert {task: set(found) for task, found in states["first evaluation"].items()
            if task in ("load-benchmark", "build-prompts", "generate", "score", "report")} == {
        "load-benchmark": {"Completed"}, "build-prompts": {"Completed"}, "generate": {"Completed"},
        "score": {"Completed"}, "report": {"Completed"}}
    assert states["first sft"]["sft-train"] == ["Completed"]


def test_an_edited_gold_answer_reruns_that_benchmark_only(states):
    step = states["gold edited"]
    for task in ("load-benchmark", "build-prompts", "generate", "score", "report"):
        assert sorted(step[task]) == ["Cached", "Completed"], (task, step)  # MGSM again, MMATH cached


def test_an_edited_exemplar_file_rebuilds_the_prompts_not_the_benchmarks(states):
    step = states["exemplar edited"]
    assert step["load-benchmark"] == ["Cached", "Cached"]
    assert step["build-prompts"] == ["Completed", "Completed"]
    assert step["generate"] == ["Completed", "Completed"]  # other prompts: generated again


def test_an_edited_word_list_rescores_without_generating(states):
    step = states["word list edited"]
    for task in ("load-benchmark", "build-prompts", "generate"):
        assert step[task] == ["Cached", "Cached"], (task, step)
    assert step["score"] == ["Completed", "Completed"]


def test_an_edited_accelerate_config_retrains_and_keeps_the_data(states):
    step = states["accelerate config edited"]
    assert step["sft-train"] == ["Completed"]
    assert set(step["data-traces-from-file"]) == {"Cached"}
