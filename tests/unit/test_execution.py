"""Fanned-out evaluations and multi-node training: the settings' refusals, how work is cut into tasks, where the
plan says it runs, the rendezvous a multi-node pool's job gives, and the shipped pool templates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.settings import ExecutionSettings, ModelSettings, Profile, SamplingSettings
from components.training.multinode import Rendezvous

REPO = Path(__file__).resolve().parents[2]

REFUSED = [  # (settings, words of the refusal)
    ({"runner": "sequential", "workers": 2}, "workers: not read by the 'sequential' runner"),
    ({"runner": "threads"}, "the threads runner needs workers"),
    ({"runner": "threads", "workers": 2, "address": "tcp://x:8786"}, "address: not read by the 'threads' runner"),
    ({"runner": "ray", "gpus": [0]}, "gpus: not read by the 'ray' runner"),
    ({"runner": "ray", "address": "auto", "workers": 2}, "workers: not read by the 'ray' runner"),
    ({"runner": "threads", "gpus": [0, 1], "gpus_per_task": 2}, "the backends set up no tensor parallelism"),
    ({"runner": "ray", "gpus_per_task": 4}, "the backends set up no tensor parallelism"),
    ({"runner": "threads", "gpus": [0, 1], "gpus_per_task": 0}, "hands each task one of the listed gpus"),
    ({"runner": "threads", "gpus": [0, 0]}, "a GPU is listed twice"),
]


@pytest.mark.parametrize(("settings", "words"), REFUSED, ids=[w for _, w in REFUSED])
def test_a_setting_the_runner_cannot_read_is_refused(settings, words):
    with pytest.raises(ValueError, match=words):
        ExecutionSettings(**settings)


def test_fan_out_needs_an_evaluation_and_shards_only_its_benchmarks():
    with pytest.raises(ValueError, match="fans out evaluations, and the profile has no evaluation section"):
        Profile(name="p", execution={"runner": "threads", "workers": 2})
    with pytest.raises(ValueError, match=r"execution.shard_languages.0: 'mmath' is not a benchmark"):
        Profile(name="p", evaluation={"benchmarks": [{"name": "mgsm"}]},
                execution={"runner": "threads", "workers": 2, "shard_languages": ["mmath"]})


WHERE = [
    ({}, "generations: one model after another in that process"),
    ({"runner": "threads", "gpus": list(range(8))},
     "generations: one task per model, 8 at once on threads, each in its own process on GPUs 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7"),
    ({"runner": "threads", "workers": 2, "split": "benchmark", "shard_languages": ["mgsm"]},
     "generations: one task per model x benchmark, one per language of mgsm, 2 at once on threads, each in its own "
     "process on the CPU"),
    ({"runner": "ray", "address": "ray://head:10001"},
     "generations: one task per model, on ray at ray://head:10001, 1 GPU(s) each"),
]


@pytest.mark.parametrize(("settings", "expected"), WHERE)
def test_the_plan_says_where_the_generations_run(settings, expected):
    from components.planning.stage import fanout_where

    assert fanout_where(ExecutionSettings(**settings)) == expected


def bench(name: str, languages: list[str], sampling: SamplingSettings = SamplingSettings()):
    from runtime.outputs import PreparedBenchmark

    items = [{"id": f"{lang}{i}", "benchmark": name, "lang": lang, "question": "q", "gold": "1"}
             for lang in languages for i in range(2)]
    return PreparedBenchmark(name=name, items=items, errors=[], prompts=[f"{i['id']}?" for i in items], stop=[],
                             sampling=sampling)


CUTS = [  # (execution, expected task names and the files of each)
    ({"split": "model"}, {"base: mgsm, msvamp, mmath": 3}),
    ({"split": "benchmark"}, {"base: mgsm": 1, "base: msvamp": 1, "base: mmath": 1}),
    ({"split": "model", "shard_languages": ["mgsm"]}, {"base: msvamp, mmath": 2, "base: mgsm[en]": 1,
                                                        "base: mgsm[fr]": 1}),
]


@pytest.mark.parametrize(("settings", "expected"), CUTS)
def test_generations_are_cut_into_tasks_as_the_profile_asks(settings, expected, tmp_path):
    from runtime.outputs import ModelRef
    from runtime.project import Project
    from tasks.fanout import plan_units_task

    model = ModelRef(tag="base", model=ModelSettings(backend="fake", model="fake"), fingerprint="f")
    sampled = SamplingSettings(n=2, temperature=0.7)
    benchmarks = [bench("mgsm", ["en", "fr"]), bench("msvamp", ["en"]), bench("mmath", ["en"], sampled)]
    units = plan_units_task.fn([model], [benchmarks], ExecutionSettings(runner="threads", workers=2, **settings),
                               Project(str(tmp_path)))
    assert {u.name: sum(len(g.files) for g in u.groups) for u in units} == expected
    whole = next(u for u in units if "msvamp" in u.name)
    assert len(whole.groups) == (2 if settings["split"] == "model" else 1)  # mmath samples: a group of its own
    shard = next((u for u in units if u.name == "base: mgsm[fr]"), None)
    if shard is not None:
        [file] = shard.groups[0].files
        assert (file.indices, [i["id"] for i in file.items]) == ([2, 3], ["fr0", "fr1"])


def test_a_finished_benchmark_is_not_planned_again(tmp_path):
    from runtime.outputs import ModelRef
    from runtime.project import Project
    from tasks.fanout import plan_units_task

    model = ModelRef(tag="base", model=ModelSettings(backend="fake", model="fake"), fingerprint="f")
    execution = ExecutionSettings(runner="threads", workers=2, split="benchmark")
    [unit] = plan_units_task.fn([model], [[bench("mgsm", ["en"])]], execution, Project(str(tmp_path)))
    Path(unit.groups[0].files[0].out).write_text("", encoding="utf-8")
    assert plan_units_task.fn([model], [[bench("mgsm", ["en"])]], execution, Project(str(tmp_path))) == []


RENDEZVOUS = [  # (environment, expected rendezvous)
    ({}, None),
    ({"POLYREASON_NNODES": "1"}, None),
    ({"POLYREASON_NNODES": "2", "POLYREASON_NODE_RANK": "1", "POLYREASON_MASTER_ADDR": "n0",
      "POLYREASON_NPROC_PER_NODE": "8", "POLYREASON_MASTER_PORT": "29600"}, Rendezvous(2, 1, 8, "n0", 29600)),
    ({"POLYREASON_NNODES": "4", "SLURM_NODEID": "3", "POLYREASON_MASTER_ADDR": "gpu01"},
     Rendezvous(4, 3, 1, "gpu01", 29500)),
    ({"POLYREASON_NNODES": "2", "JOB_COMPLETION_INDEX": "0", "POLYREASON_MASTER_ADDR": "job-0.nodes"},
     Rendezvous(2, 0, 1, "job-0.nodes", 29500)),
]


@pytest.mark.parametrize(("env", "expected"), RENDEZVOUS)
def test_the_rendezvous_comes_from_the_pools_job(env, expected):
    assert Rendezvous.from_env(env) == expected


def test_a_multi_node_job_without_node_0s_address_is_refused():
    with pytest.raises(ValueError, match="POLYREASON_MASTER_ADDR unset"):
        Rendezvous.from_env({"POLYREASON_NNODES": "2", "POLYREASON_NODE_RANK": "1"})


def test_each_node_launches_its_rank_of_the_whole_job():
    from components.training.runner import launch_command

    command = launch_command("py", Path("zero3.yaml"), Path("j.json"), Path("o"), cpu_threads=None,
                             rendezvous=Rendezvous(2, 1, 8, "n0", 29500))
    assert command[1:13] == ["-m", "accelerate.commands.launch", "--config_file", "zero3.yaml", "--num_machines", "2",
                             "--machine_rank", "1", "--num_processes", "16", "--main_process_ip", "n0"]
    with pytest.raises(ValueError, match="needs an accelerate config"):
        launch_command("py", None, Path("j.json"), Path("o"), rendezvous=Rendezvous(2, 1, 8, "n0", 29500))


def test_the_pool_templates_set_what_the_nodes_read():
    template = json.loads((REPO / "examples/pools/kubernetes-multinode.json").read_text(encoding="utf-8"))
    container = template["job_configuration"]["job_manifest"]["spec"]["template"]["spec"]["containers"][0]
    names = {entry["name"] for entry in container["env"]}
    assert {"POLYREASON_NNODES", "POLYREASON_NPROC_PER_NODE", "POLYREASON_MASTER_ADDR", "POLYREASON_MASTER_PORT",
            "POLYREASON_PROJECT_DIR"} <= names
    assert template["job_configuration"]["command"].startswith("python -m components.training.node_role auto -- ")
    assert {"nodes", "gpus_per_node"} <= set(template["variables"]["properties"])
    sbatch = (REPO / "examples/pools/slurm-multinode.sbatch").read_text(encoding="utf-8")
    for variable in ("POLYREASON_NNODES", "POLYREASON_MASTER_ADDR", "POLYREASON_NODES_DIR", "POLYREASON_PROJECT_DIR"):
        assert f"export {variable}=" in sbatch
    assert "python -m components.training.node_role auto -- " in sbatch


def test_a_runner_whose_package_is_missing_is_refused_before_any_work(monkeypatch, tmp_path):
    from cli.preflight import execution_problems
    from runtime.flow_runs import task_runners

    monkeypatch.setitem(task_runners.EXTRAS, "ray", "prefect_ray_not_installed_here")
    profile = Profile(name="p", project_dir=str(tmp_path), evaluation={"benchmarks": [{"name": "mgsm"}]},
                      execution={"runner": "ray"})
    assert execution_problems(profile, ["evaluation"]) == [
        "execution.runner: 'ray' needs prefect-ray-not-installed-here; install it with pip install 'polyreason[ray]'"]
    assert execution_problems(profile, ["data"]) == []  # a command that evaluates nothing does not need it
