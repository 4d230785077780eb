"""Full-parameter SFT and GRPO on two CPU processes under DeepSpeed ZeRO-3 and FSDP2, as the tasks launch them.

The shipped CPU twins of the GPU launch configs (``cpu-zero3-2`` of ``multi-gpu-zero3-2``, ``cpu-fsdp-2`` of
``multi-gpu-fsdp-4``, which differ from them only where a CPU must) through the training entry and its launch
(``runtime.processes.trainer.run_trainer``: ``accelerate launch … -m components.training``). Per backend, four launches
shared by the tests:

* SFT of every weight of the tiny random model, 3 steps with a checkpoint after each, and the same run resumed
  from its checkpoint 1 (copied into a fresh directory);
* GRPO of every weight of the forking model (``tests/helpers/scripted_model.py``: after the prompt it writes
  ``La réponse est`` or ``\\boxed{13}`` about half and half, so PCS's reward differs within a group and a step
  at learning rate 1e-2 moves the policy), with trl's reference model (beta > 0) and the KL-triggered reference
  reset, 3 steps with a checkpoint after each, and the same run resumed from its checkpoint 1.

What the processes really held is read from inside them by ``tests/helpers/shard_probe`` (the sharding libraries'
own gathers, never the project's code): at the start of training every rank's whole reference and policy
weights against the original file, and at the end the gathered trained policy. Against those, and against the
uninterrupted run: the recorded distributed type is the config's (and its checkpoints have that backend's
layout, its parameters were sharded on every rank); the reference equals the original weights, and the policy,
on every rank at step 0; KL is ~0 at step 1 and the reset fires; the resumed run ends with the uninterrupted
run's weights; the saved model loads back and equals the gathered trained weights. (The LcRL profile's GRPO —
search loop, coupled groups — runs on ``cpu-fsdp-2`` through the CLI in ``tests/e2e/test_lcrl_flow.py``.)

DeepSpeed compiles a CPU op (its shared-memory communication) on first use, into ``TORCH_EXTENSIONS_DIR``
(the Makefile keeps it under the virtual environment): the module builds it once, before the launches.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from components.training.accelerate import ACCELERATE_CONFIGS
from tests.e2e.conftest import free_port

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
PROBE = REPO / "tests" / "helpers" / "shard_probe"
BACKENDS = {"zero3": ("cpu-zero3-2", "DEEPSPEED"), "fsdp": ("cpu-fsdp-2", "FSDP")}
STEPS = 3
KL_THRESHOLD = 1e-3  # above step 1's KL (reference = policy) and below step 2's (after a step at lr 1e-2)
SFT_ROWS = [{"id": str(i), "lang": "fr", "question": q, "gold": "13", "prompt": q, "completion": "Donc \\boxed{13}"}
            for i, q in enumerate(["Janet a 16 œufs et en vend 3. Combien en reste-t-il ?",
                                   "Paul a 20 billes et en donne 7. Combien lui en reste-t-il ?",
                                   "Marie a 15 pommes et en mange 2. Combien en reste-t-il ?",
                                   "Luc a 18 livres et en prête 5. Combien lui en reste-t-il ?"])]
TIMES: dict[str, float] = {}


def launch_config(name: str, directory: Path) -> str:
    """The shipped config with a free rendezvous port (tests run beside each other)."""
    text = ACCELERATE_CONFIGS[name].read_text(encoding="utf-8")
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.yaml"
    path.write_text(text.replace("main_process_port: ", f"main_process_port: {free_port()} #"), encoding="utf-8")
    return str(path)


def observed_run(job, out: Path, original: Path, label: str) -> dict:
    """Run the job's launch with the shard probe in its processes; ``result.json`` with the probe's records."""
    from runtime.processes.trainer import run_trainer

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(PROBE), str(REPO), os.environ.get("PYTHONPATH")])))
        patch.setenv("POLYREASON_SHARD_PROBE", str(out / "probe"))
        patch.setenv("POLYREASON_SHARD_PROBE_ORIGINAL", str(original / "model.safetensors"))
        started = time.monotonic()
        run_trainer(job, out)
        TIMES[label] = round(time.monotonic() - started, 1)
    print(f"launch {label}: {TIMES[label]} s")
    result = json.loads((out / "result.json").read_text(encoding="utf-8"))
    result["begin"] = [json.loads(path.read_text()) for path in sorted((out / "probe").glob("begin-*.json"))]
    return result


def resumed_from_checkpoint_1(job, out: Path, original: Path, label: str) -> dict:
    """The same job in a fresh directory that holds only the uninterrupted run's checkpoint 1."""
    fresh = out.parent / f"{out.name}-resumed"
    shutil.copytree(out / "trainer" / "checkpoint-1", fresh / "trainer" / "checkpoint-1")
    return observed_run(job, fresh, original, label)


@pytest.fixture(scope="module")
def deepspeed_op() -> float:
    """Build (or load) DeepSpeed's CPU communication op once in this process: the launches then load it."""
    from deepspeed.accelerator import get_accelerator

    started = time.monotonic()
    get_accelerator().create_op_builder("ShareMemCommBuilder").load()
    seconds = TIMES["deepspeed CPU op"] = round(time.monotonic() - started, 1)
    print(f"DeepSpeed's CPU communication op built or loaded in {seconds} s")
    return seconds


@pytest.fixture(scope="module")
def forking(tmp_path_factory) -> dict:
    """The forking policy, its four prompts (one language each pair) and the GRPO section's fixed part."""
    from components.settings import GRPOStageSettings
    from components.training.grpo_data import training_rows
    from tests.helpers.grpo_vllm import FIRST, PCS, ROWS, SECOND
    from tests.helpers.scripted_model import build_forking_model
    from tests.helpers.tiny_model import build_tokenizer

    root = tmp_path_factory.mktemp("forking")
    data = root / "rows.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ROWS), encoding="utf-8")
    section = {"model": {"model": str(root / "model"), "device": "cpu", "dtype": "float32", "chat": True},
               "dataset": str(data), "prompt": {"style": "plain"}, "rewards": [PCS], "max_steps": STEPS,
               "learning_rate": 1e-2, "beta": 0.04, "kl_reset": {"enabled": True, "threshold": KL_THRESHOLD},
               "lora": None, "per_device_train_batch_size": 4, "save_steps": 1, "save_total_limit": None,
               "sampling": {"n": 4, "temperature": 1.0, "max_new_tokens": 8, "seed": 0},
               "audit": {"enabled": False}, "cpu_threads": 1}
    tokenizer = build_tokenizer()
    rendered = GRPOStageSettings(**{**section, "accelerate_config": None})
    ends = {tokenizer(row["prompt"], add_special_tokens=False)["input_ids"][-1]
            for row in training_rows(ROWS, rendered, rendered.model, tokenizer)}
    assert len(ends) == 1, "the rendered prompts must end with one token (the fork)"
    model = build_forking_model(root / "model", ends.pop(), FIRST, SECOND)
    return {"model": model, "data": data, "section": section}


@pytest.fixture(scope="module", params=sorted(BACKENDS))
def runs(request, deepspeed_op, forking, tiny_model_dir, tmp_path_factory) -> dict:
    """The backend's four launches: SFT and GRPO, each uninterrupted and resumed from its checkpoint 1."""
    from components.data.datasets import write_table
    from components.settings import GRPOStageSettings, SFTSettings
    from components.training.runner import TrainingJob

    config_name, kind = BACKENDS[request.param]
    root = tmp_path_factory.mktemp(request.param)
    sft_data = write_table(SFT_ROWS, root / "sft.parquet", "sft")
    sft = SFTSettings(model={"model": str(tiny_model_dir), "device": "cpu", "dtype": "float32"}, template="plain",
                      max_length=64, per_device_train_batch_size=1, max_steps=STEPS, save_steps=1,
                      save_total_limit=None, gradient_checkpointing=False, lora=None,
                      accelerate_config=launch_config(config_name, root / "sft-config"), cpu_threads=1)
    sft_job = TrainingJob(stage="sft", sft=sft, model=str(tiny_model_dir), dataset=str(sft_data))
    grpo = GRPOStageSettings(**forking["section"], accelerate_config=launch_config(config_name, root / "grpo-config"))
    grpo_job = TrainingJob(stage="grpo", grpo=grpo, model=str(forking["model"]), dataset=str(forking["data"]))
    out = {"kind": kind, "root": root, "sft_model": tiny_model_dir, "grpo_model": forking["model"]}
    out["sft"] = observed_run(sft_job, root / "sft", tiny_model_dir, f"{request.param} SFT")
    out["sft_resumed"] = resumed_from_checkpoint_1(sft_job, root / "sft", tiny_model_dir, f"{request.param} SFT resumed")
    out["grpo"] = observed_run(grpo_job, root / "grpo", forking["model"], f"{request.param} GRPO")
    out["grpo_resumed"] = resumed_from_checkpoint_1(grpo_job, root / "grpo", forking["model"],
                                                    f"{request.param} GRPO resumed")
    return out


def metrics(result: dict) -> dict[int, dict]:
    from components.training.runner import read_metrics

    return {int(row["step"]): row for row in read_metrics(result["metrics_path"])} if "metrics_path" in result else {}


def saved_weights(directory: str | Path) -> dict:
    """The saved model as transformers loads it back, by parameter name."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(directory, dtype="auto")
    return {name: p.detach() for name, p in model.named_parameters()}


def largest_difference(left: dict, right: dict) -> float:
    assert set(left) == set(right), sorted(set(left) ^ set(right))
    return max(float((left[n].float() - right[n].float()).abs().max()) for n in left)


@pytest.mark.parametrize("stage", ["sft", "grpo"])
def test_the_run_records_the_sharding_it_really_used(runs, stage):
    result = runs[stage]
    assert (result["distributed_type"], result["num_processes"]) == (runs["kind"], 2)
    held = {"FSDP": "float32", "DEEPSPEED": "bfloat16"}[runs["kind"]]  # FSDP2's fp32 parameters, DeepSpeed's module
    assert (result["bf16"], result["weights_dtype"]) == (True, held)  # the launch's bf16, the trainer's too
    assert [r["distributed_type"] for r in result["begin"]] == [runs["kind"]] * 2  # seen by each rank itself
    assert all(r["policy_sharded"] for r in result["begin"]), result["begin"]  # each rank held part of every weight
    checkpoint = Path(result["trainer_dir"]) / "checkpoint-1"
    if runs["kind"] == "FSDP":  # accelerate's FSDP checkpoint, not DDP's optimizer.pt
        assert (checkpoint / "pytorch_model_fsdp.bin").is_file() and not (checkpoint / "optimizer.pt").exists()
    else:  # DeepSpeed's partitioned states, one file per rank
        assert len(list((checkpoint / "global_step1").glob("*zero_pp_rank_*_model_states.pt"))) == 2


def test_reference_equals_the_original_weights_and_the_policy_on_every_rank_at_step_0(runs):
    begin = runs["grpo"]["begin"]
    assert [r["rank"] for r in begin] == [0, 1] and all(r["step"] == 0 for r in begin)
    for record in begin:
        assert record["reference_sharded"], record
        assert record["reference_vs_original"] == 0.0, record  # in the reference's dtype
        assert record["reference_vs_policy"] == 0.0, record
    for record in runs["grpo_resumed"]["begin"]:  # the resumed policy moved; its reference is still the original
        assert record["step"] == 1 and record["reference_vs_original"] == 0.0, record
        assert record["policy_vs_original"] > 0.0, record
    print(f"{runs['kind']}: max |reference - original| at step 0 = "
          f"{max(r['reference_vs_original'] for r in begin)} on ranks {[r['rank'] for r in begin]}")


def test_kl_starts_at_zero_and_the_reset_fires(runs):
    steps = metrics(runs["grpo"])
    assert steps[1]["kl"] < KL_THRESHOLD, steps[1]  # reference = policy: only rounding
    resets = runs["grpo"]["reference_resets"]
    assert resets >= 1 and steps[STEPS]["curriculum/reference_resets"] == resets, steps
    print(f"{runs['kind']}: KL by step {[round(steps[s]['kl'], 6) for s in range(1, STEPS + 1)]}, {resets} reset(s)")


@pytest.mark.parametrize("stage", ["sft", "grpo"])
def test_the_resumed_run_ends_with_the_uninterrupted_runs_weights(runs, stage):
    whole, resumed = runs[stage], runs[f"{stage}_resumed"]
    assert (resumed["start_step"], resumed["global_step"]) == (1, STEPS)
    difference = largest_difference(saved_weights(whole["full_model_dir"]), saved_weights(resumed["full_model_dir"]))
    assert difference == 0.0
    if stage == "grpo":
        assert resumed["reference_resets"] == whole["reference_resets"]
        first, second = metrics(whole), metrics(resumed)
        assert [second[s]["kl"] for s in (2, 3)] == [first[s]["kl"] for s in (2, 3)]
    print(f"{runs['kind']} {stage}: max |resumed - uninterrupted| = {difference}")


@pytest.mark.parametrize("stage", ["sft", "grpo"])
def test_the_saved_model_loads_back_as_the_gathered_trained_weights(runs, stage):
    from safetensors.torch import load_file

    result = runs[stage]
    gathered = load_file(str(Path(result["full_model_dir"]).parent / "probe" / "trained.safetensors"))
    saved = saved_weights(result["full_model_dir"])
    assert {str(t.dtype) for t in saved.values()} == {str(t.dtype) for t in gathered.values()}
    assert largest_difference(saved, gathered) == 0.0
    original = saved_weights(runs[f"{stage}_model"])
    assert largest_difference(saved, {n: original[n].to(saved[n].dtype) for n in saved}) > 0.0  # it trained
