"""GPU check on one CUDA device: tiny-model SFT and GRPO steps and transformers generation in bf16, and CI's vLLM tests.

Run by ``bench/gpu_check.sh`` (which installs the wheels that travel with it first). Each part
runs polyreason's own code in this process on the tiny from-config model of the tests
(``tests.helpers.tiny_model``):

* SFT: ``components.training.sft.build_trainer`` (trl ``SFTTrainer`` + peft LoRA), bf16;
* GRPO: ``components.training.grpo.build_trainer`` (trl ``GRPOTrainer``, generation by
  transformers on the GPU) with the accuracy reward, plus PCS when lingua is installed;
* generation: the transformers backend (``components.generation``) in bf16, and greedy
  agreement of CUDA float32 with CPU float32;
* vllm_paths: the tests CI runs in its vLLM environment (``VLLM_TESTS``: trl's GRPO with vLLM
  colocated, trl's client against trl's server, SFT then vLLM with the adapter, a GPU profile's
  evaluation), in a pytest subprocess, on CUDA in bfloat16 where vLLM is installed (the GPU pins:
  ``pip install -c constraints/gpu.txt -e ".[gpu]"``); skipped, saying why, where it is not.
  On CPU and with ``--smoke`` they are only collected (CI runs them on CPU already);
* two_gpu: server-mode GRPO (``SERVER_GRPO``: the trainer on one device, trl's vLLM server on
  another, weights synced over NCCL) where two CUDA devices exist; "not verified on this host"
  where fewer do.

Each path (a part, or one test of a pytest part) is then run / skipped (why) / failed, printed
as a table before the JSON line (``gpu_verdict``); the exit code is 0 only when every path ran on
the GPU and passed, 1 when one failed or disagreed, 2 when some path was not verified.
``--smoke`` exits 0 unless a part failed. Without a CUDA device every part is skipped, saying so.

For each part: the step times (median after the first step, which pays for CUDA kernels'
first use; the first is printed too), the peak CUDA memory (``torch.cuda.max_memory_allocated``,
reset before the part) and the wall time. ``--device cpu`` runs the same code on the CPU
(float32; to try the script where there is no GPU); ``--smoke`` is ``--device cpu --steps 2``.
The last line is one JSON object.

    python bench/gpu_check.py [--device cuda] [--steps 6] [--out DIR] [--smoke]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from gpu_verdict import PathOutcome, exit_code, junit_outcomes, part_outcome, table  # noqa: E402
VLLM_TESTS = ("tests/integration/test_vllm_backend.py", "tests/integration/test_trl_vllm_*.py")  # as the Makefile
VLLM_LIMIT_S = float(os.environ.get("GPU_CHECK_VLLM_LIMIT_S", "300"))
IN_PROCESS_PARTS = ("sft", "grpo", "generation", "agreement")

QUESTIONS = [
    ("en", "Janet has 16 eggs and sells 3. How many are left?", "13"),
    ("fr", "Janet a 16 œufs et en vend 3. Combien en reste-t-il ?", "13"),
    ("ja", "ジャネットは卵を16個持っていて、3個売ります。残りは？", "13"),
    ("th", "เจเน็ตมีไข่ 16 ฟองและขายไป 3 ฟอง เหลือกี่ฟอง", "13"),
    ("pt", "A Janet tem 16 ovos e vende 3. Quantos restam?", "13"),
    ("de", "Janet hat 16 Eier und verkauft 3. Wie viele bleiben?", "13"),
    ("es", "Janet tiene 16 huevos y vende 3. ¿Cuántos quedan?", "13"),
    ("zh", "珍妮特有16个鸡蛋，卖了3个。还剩几个？", "13"),
]


class StepTimer:
    """A trainer callback: wall seconds of every optimizer step (device synchronised)."""

    def __init__(self, device: str) -> None:
        self.device, self.times, self._start = device, [], 0.0

    def _sync(self) -> None:
        if self.device == "cuda":
            import torch

            torch.cuda.synchronize()

    def on_step_begin(self, args, state, control, **kwargs):
        self._sync()
        self._start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        self._sync()
        self.times.append(time.perf_counter() - self._start)

    def __getattr__(self, name):  # every other TrainerCallback event: nothing to do
        if name.startswith("on_"):
            return lambda *args, **kwargs: None
        raise AttributeError(name)


def measured(name: str, device: str, run) -> dict:
    """Run ``run()`` (returns a dict, maybe with step ``times``); add wall time and peak memory."""
    import torch

    if device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    result = run()
    result["wall_s"] = round(time.perf_counter() - start, 2)
    if device == "cuda":
        result["peak_mem_mib"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    times = result.pop("times", None)
    if times:
        result.update(steps=len(times), first_step_s=round(times[0], 3),
                      step_s=round(statistics.median(times[1:] or times), 3))
    print(f"[{name}] " + ", ".join(f"{k}={v}" for k, v in result.items()), flush=True)
    return result


def model_settings(model_dir: Path, device: str, dtype: str):
    from components.settings import ModelSettings

    return ModelSettings(model=str(model_dir), device=device, dtype=dtype)


def sft_part(model_dir: Path, work: Path, device: str, dtype: str, steps: int) -> dict:
    import pandas as pd

    from components.settings import SFTSettings
    from components.training.runner import TrainingJob
    from components.training.sft import build_trainer

    rows = [{"prompt": q, "completion": f"<think>16 - 3 = {g}</think> \\boxed{{{g}}}"} for _, q, g in QUESTIONS] * 8
    data = work / "sft.parquet"
    pd.DataFrame(rows).to_parquet(data)
    settings = SFTSettings(model=model_settings(model_dir, device, dtype), template="plain", max_length=128,
                           max_steps=steps, per_device_train_batch_size=8, save_steps=10_000,
                           accelerate_config=None, resume=False)
    job = TrainingJob(stage="sft", sft=settings, model=str(model_dir), dataset=str(data))
    trainer, _ = build_trainer(job, work / "sft")
    timer = StepTimer(device)
    trainer.add_callback(timer)
    output = trainer.train()
    return {"times": timer.times, "loss": round(output.training_loss, 4), "bf16": trainer.args.bf16}


def grpo_part(model_dir: Path, work: Path, device: str, dtype: str, steps: int) -> dict:
    from components.settings import GRPOStageSettings
    from components.training.grpo import build_trainer
    from components.training.runner import TrainingJob

    data = work / "grpo.jsonl"
    rows = [{"id": f"q{i}", "lang": lang, "question": q, "gold": g} for i, (lang, q, g) in enumerate(QUESTIONS)]
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    rewards = [{"name": "accuracy"}]
    if importlib.util.find_spec("lingua") is not None:
        rewards.append({"name": "pcs", "params": {"require_think": False, "extraction": "lenient"}})
    settings = GRPOStageSettings(
        model=model_settings(model_dir, device, dtype), rewards=rewards, max_steps=steps,
        per_device_train_batch_size=8, sampling={"n": 4, "temperature": 1.0, "max_new_tokens": 64, "seed": 0},
        prompt={"style": "plain"}, save_steps=10_000, resume=False, audit={"enabled": False},
        accelerate_config=None)
    job = TrainingJob(stage="grpo", grpo=settings, model=str(model_dir), dataset=str(data))
    trainer, _ = build_trainer(job, work / "grpo", None, None)
    timer = StepTimer(device)
    trainer.add_callback(timer)
    trainer.train()
    return {"times": timer.times, "rewards": "+".join(r["name"] for r in rewards), "bf16": trainer.args.bf16}


def generation_part(model_dir: Path, work: Path, device: str, dtype: str) -> dict:
    from components.generation import build_generator
    from components.settings import SamplingSettings

    generator = build_generator(model_settings(model_dir, device, dtype), work / "cache")
    generator.progress = False
    prompts = [q for _, q, _ in QUESTIONS] * 8
    sampling = SamplingSettings(max_new_tokens=128, batch_size=16)
    generator.generate(prompts[:2], sampling.model_copy(update={"max_new_tokens": 4}))  # warm-up
    generator.generate(prompts, sampling)
    stats = generator.stats
    return {"prompts": stats.prompts, "tokens": stats.tokens, "tokens_per_s": round(stats.tokens_per_second, 1)}


def agreement_part(model_dir: Path, work: Path, device: str) -> dict:
    """Greedy float32 outputs on ``device`` and on the CPU: the same texts?"""
    from components.generation import build_generator
    from components.settings import SamplingSettings

    sampling = SamplingSettings(max_new_tokens=16, batch_size=4)
    prompts = [q for _, q, _ in QUESTIONS]
    texts = {}
    for where in dict.fromkeys([device, "cpu"]):
        generator = build_generator(model_settings(model_dir, where, "float32"), work / "cache")
        generator.progress = False
        texts[where] = [samples[0].text for samples in generator.generate(prompts, sampling)]
    return {"same_greedy_as_cpu": texts[device] == texts["cpu"]}


SERVER_GRPO = "tests/integration/test_trl_vllm_server.py::test_server_mode_grpo_syncs_the_trained_weights"


def vllm_files() -> list[str]:
    return sorted(str(path.relative_to(REPO)) for pattern in VLLM_TESTS for path in REPO.glob(pattern))


def pytest_part(work: Path, device: str, label: str, targets: list[str], extra: list[str],
                collect_only: bool) -> dict:
    """Tests in a pytest subprocess; each test's outcome from its JUnit XML (``gpu_verdict.junit_outcomes``)."""
    missing = [name for name in ("vllm", "pytest") if importlib.util.find_spec(name) is None]
    if missing:
        return {"skipped": f"{' and '.join(missing)} not importable in this interpreter; install the GPU pins "
                           "and pytest: pip install -c constraints/gpu.txt -e '.[gpu]' pytest"}
    junit = work / f"{label}.xml"
    command = [sys.executable, "-m", "pytest", "-m", "vllm", "-q", "-p", "no:cacheprovider", "-rs",
               f"--junitxml={junit}", *(["--collect-only"] if collect_only else []), *extra, *targets]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=VLLM_LIMIT_S)
    if collect_only:
        if done.returncode != 0:
            raise RuntimeError(f"pytest --collect-only exited {done.returncode}:\n{done.stdout[-3000:]}")
        found = re.search(r"(\d+) tests? collected", done.stdout)
        return {"collected": int(found.group(1)) if found else 0, "ran": False,
                "skipped": f"collected only, not run ({device}: CI runs these on CPU)"}
    if done.returncode not in (0, 1) or not junit.exists():  # 0 all passed, 1 some failed: else pytest broke
        raise RuntimeError(f"pytest exited {done.returncode} on {device}:\n{done.stdout[-3000:]}{done.stderr[-2000:]}")
    result = junit_counts(junit)
    result["outcomes"] = [vars(o) for o in junit_outcomes(junit, device)]
    return result


def vllm_paths_part(work: Path, device: str, collect_only: bool) -> dict:
    """CI's vLLM tests on one device (server-mode GRPO, which needs two, is the two_gpu part's)."""
    return pytest_part(work, device, "vllm-tests", vllm_files(), [f"--deselect={SERVER_GRPO}"], collect_only)


def two_gpu_part(work: Path, device: str, collect_only: bool) -> dict:
    """Server-mode GRPO (trl's NCCL weight transfer: trainer and vLLM server on two devices) where two exist."""
    import torch

    devices = torch.cuda.device_count() if device == "cuda" and torch.cuda.is_available() else 0
    if collect_only or devices < 2:
        return {"skipped": f"not verified on this host: {devices} CUDA device(s), server-mode GRPO needs 2"}
    return pytest_part(work, device, "two-gpu-tests", [SERVER_GRPO], [], collect_only=False)


def junit_counts(path: Path) -> dict:
    """Passed/failed/skipped counts, seconds and each skip's reason from pytest's JUnit XML."""
    import xml.etree.ElementTree as ElementTree

    suite = ElementTree.parse(path).getroot().find("testsuite")
    counts = {key: int(suite.get(key, 0)) for key in ("tests", "failures", "errors", "skipped")}
    skips = {case.get("name"): case.find("skipped").get("message", "")[:300]
             for case in suite.iter("testcase") if case.find("skipped") is not None}
    return {"passed": counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"],
            "failed": counts["failures"] + counts["errors"], "skipped_tests": skips, "ran": True,
            "tests_s": round(float(suite.get("time", 0)), 1)}


def outcomes_of(report: dict, device: str) -> list[PathOutcome]:
    """Every path of the check with its outcome: one row per in-process part, one per vLLM test (or file)."""
    rows = [part_outcome(name, report[name], device) for name in IN_PROCESS_PARTS]
    for name, targets in (("vllm_paths", vllm_files()), ("two_gpu", [SERVER_GRPO])):
        result = report[name]
        if "outcomes" in result:
            rows += [PathOutcome(f"{name}: {o['path']}", o["status"], o["why"]) for o in result["outcomes"]]
        else:
            whole = part_outcome(name, result, device)
            rows += [PathOutcome(f"{name}: {target}", whole.status, whole.why) for target in targets]
    return rows


def environment(device: str) -> dict:
    import torch
    from importlib.metadata import version

    info = {name: version(name) for name in ("torch", "transformers", "peft", "accelerate", "trl")}
    info["python"] = sys.version.split()[0]
    if device == "cuda":
        info["gpu"] = torch.cuda.get_device_name(0)
    print("[environment] " + ", ".join(f"{k}={v}" for k, v in info.items()), flush=True)
    return info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--out", default=None, help="working directory (default: a temporary one)")
    parser.add_argument("--smoke", action="store_true", help="--device cpu --steps 2; vLLM tests collected only")
    args = parser.parse_args()
    if args.smoke:
        args.device, args.steps = "cpu", 2
    work = Path(args.out or tempfile.mkdtemp(prefix="polyreason-gpu-check-"))
    work.mkdir(parents=True, exist_ok=True)
    report = run_parts(args, work)
    outcomes = outcomes_of(report, args.device)
    print(table(outcomes), flush=True)
    code = exit_code(outcomes, smoke=args.smoke)
    report["failed"] = sorted({o.path.split(":")[0] for o in outcomes if o.status == "failed"})
    report["verdict"] = {"exit_code": code, "run": sum(o.status == "run" for o in outcomes),
                         "not_verified": [o.path for o in outcomes if o.status != "run"]}
    print(json.dumps(report))
    raise SystemExit(code)


def run_parts(args, work: Path) -> dict:
    """Each part's report entry; without a CUDA device (and not ``--device cpu``) every part is skipped, saying so."""
    import torch

    report = {"environment": environment(args.device if torch.cuda.is_available() else "cpu")}
    if args.device == "cuda" and not torch.cuda.is_available():
        why = "no CUDA device visible (torch.cuda.is_available() is False); --device cpu to try on CPU"
        print(f"gpu_check: {why}", flush=True)
        return report | {name: {"skipped": why} for name in (*IN_PROCESS_PARTS, "vllm_paths", "two_gpu")}
    dtype = "bfloat16" if args.device == "cuda" else "float32"
    from tests.helpers.tiny_model import build_tiny_model

    model_dir = build_tiny_model(work / "tiny-model")
    collect_only = args.smoke or args.device != "cuda"
    parts = {
        "sft": lambda: sft_part(model_dir, work, args.device, dtype, args.steps),
        "grpo": lambda: grpo_part(model_dir, work, args.device, dtype, args.steps),
        "generation": lambda: generation_part(model_dir, work, args.device, dtype),
        "agreement": lambda: agreement_part(model_dir, work, args.device),
        "vllm_paths": lambda: vllm_paths_part(work, args.device, collect_only),
        "two_gpu": lambda: two_gpu_part(work, args.device, collect_only),
    }
    for name, run in parts.items():
        try:
            report[name] = measured(name, args.device, run)
        except Exception as error:  # a bench reports every part; the failing one is named and the rest still run
            report[name] = {"error": f"{type(error).__name__}: {error}"}
            print(f"[{name}] FAILED: {type(error).__name__}: {error}", flush=True)
    return report


if __name__ == "__main__":
    from components.catalog import install

    install()  # settings check registry names against the project's registries, as on the command line
    main()
