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
  colocated and in server mode, SFT then vLLM with the adapter, a GPU profile's evaluation), in
  a pytest subprocess, on CUDA in bfloat16 where vLLM is installed (the GPU pins:
  ``pip install -c constraints/gpu.txt -e ".[gpu]"``); reported as skipped where it is not.
  On CPU and with ``--smoke`` they are only collected (CI runs them on CPU already).

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
VLLM_TESTS = ("tests/integration/test_vllm_backend.py", "tests/integration/test_trl_vllm_*.py")  # as the Makefile
VLLM_LIMIT_S = float(os.environ.get("GPU_CHECK_VLLM_LIMIT_S", "300"))

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


def vllm_paths_part(work: Path, device: str, collect_only: bool) -> dict:
    """CI's vLLM tests in a pytest subprocess: their counts and skip reasons (a failed test fails the part)."""
    missing = [name for name in ("vllm", "pytest") if importlib.util.find_spec(name) is None]
    if missing:
        return {"skipped": f"{' and '.join(missing)} not importable in this interpreter; install the GPU pins "
                           "and pytest: pip install -c constraints/gpu.txt -e '.[gpu]' pytest"}
    files = sorted(str(path.relative_to(REPO)) for pattern in VLLM_TESTS for path in REPO.glob(pattern))
    junit = work / "vllm-tests.xml"
    command = [sys.executable, "-m", "pytest", "-m", "vllm", "-q", "-p", "no:cacheprovider", "-rs",
               f"--junitxml={junit}", *(["--collect-only"] if collect_only else []), *files]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=VLLM_LIMIT_S)
    if done.returncode != 0:
        raise RuntimeError(f"pytest exited {done.returncode} on {device}:\n{done.stdout[-3000:]}{done.stderr[-2000:]}")
    if collect_only:
        return {"collected": int(re.search(r"(\d+) tests? collected", done.stdout).group(1)), "ran": False}
    return junit_counts(junit)


def junit_counts(path: Path) -> dict:
    """Passed/failed/skipped counts, seconds and each skip's reason from pytest's JUnit XML."""
    import xml.etree.ElementTree as ElementTree

    suite = ElementTree.parse(path).getroot().find("testsuite")
    counts = {key: int(suite.get(key, 0)) for key in ("tests", "failures", "errors", "skipped")}
    skips = {case.get("name"): case.find("skipped").get("message", "")[:300]
             for case in suite.iter("testcase") if case.find("skipped") is not None}
    return {"passed": counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"],
            "failed": counts["failures"] + counts["errors"], "skipped": skips, "ran": True,
            "tests_s": round(float(suite.get("time", 0)), 1)}


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
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no CUDA device visible (torch.cuda.is_available() is False); --device cpu to try on CPU")
    dtype = "bfloat16" if args.device == "cuda" else "float32"
    from tests.helpers.tiny_model import build_tiny_model

    work = Path(args.out or tempfile.mkdtemp(prefix="polyreason-gpu-check-"))
    work.mkdir(parents=True, exist_ok=True)
    report = {"environment": environment(args.device)}
    model_dir = build_tiny_model(work / "tiny-model")
    parts = {
        "sft": lambda: sft_part(model_dir, work, args.device, dtype, args.steps),
        "grpo": lambda: grpo_part(model_dir, work, args.device, dtype, args.steps),
        "generation": lambda: generation_part(model_dir, work, args.device, dtype),
        "agreement": lambda: agreement_part(model_dir, work, args.device),
        "vllm_paths": lambda: vllm_paths_part(work, args.device, collect_only=args.smoke or args.device != "cuda"),
    }
    failed = []
    for name, run in parts.items():
        try:
            report[name] = measured(name, args.device, run)
        except Exception as error:  # a bench reports every part; the failing one is named and the rest still run
            failed.append(name)
            report[name] = {"error": f"{type(error).__name__}: {error}"}
            print(f"[{name}] FAILED: {type(error).__name__}: {error}", flush=True)
    report["failed"] = failed
    print(json.dumps(report))
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
