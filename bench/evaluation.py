"""Evaluation-flow overhead on the tiny from-config model.

Prints (1) the flow's wall time divided by the time the backend spent generating
(target <= 1.10: flow, scoring and logging add at most 10%) and (2) the cached
re-run's wall time divided by the first run's (target <= 0.05). The workload is
the whole offline MGSM in en/fr/ja (250 problems each, 4 samples, 128 new tokens);
``--prompts-per-language`` takes the first N instead. Before timing, the temporary
Prefect server is started (a warm-up flow) and the project's MLflow store is
created (a warm-up run), as a project that has run before has both; ``--cold``
times them too.

The excess over the backend time is mostly a per-process constant, not a per-sample
cost: building the lingua detector, importing math-verify and matplotlib (measured
here in a fresh interpreter and printed), and Prefect's flow-run heartbeat thread,
which is joined at flow exit and sleeps in 1 s steps. On this 2-core machine torch
generates on both cores, so that set-up cannot hide behind generation (a warm-up
thread or process measured 1-3 s slower generation and no wall-time gain); it shows
on small workloads: 48 problems per language (20 s of generation) gave 1.17.
Last line: {"overhead_ratio": ..., "cached_ratio": ...}. ``--smoke`` (CI): one problem per
language, one sample of 4 tokens: seconds of work, so the ratios then say nothing.

    python bench/evaluation.py [--prompts-per-language N] [--max-new-tokens 128] [--cold] [--smoke]
"""

from __future__ import annotations

import argparse
import atexit
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from locations import shared_data

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SMOKE = {"prompts_per_language": 1, "samples": 1, "max_new_tokens": 4}

ONE_TIME_COSTS = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
import torch, transformers  # already loaded in a flow process before scoring starts
costs = {}
start = time.perf_counter()
from components.language import get_detector
get_detector({"en", "fr", "ja"})
costs["lingua_detector_s"] = time.perf_counter() - start
start = time.perf_counter()
import math_verify
costs["math_verify_import_s"] = time.perf_counter() - start
start = time.perf_counter()
import matplotlib.figure
costs["matplotlib_import_s"] = time.perf_counter() - start
print(json.dumps({k: round(v, 2) for k, v in costs.items()}))
"""


def one_time_costs() -> dict:
    """Per-process set-up the first scoring and report pay, timed in a fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", ONE_TIME_COSTS, str(REPO)], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--prompts-per-language", type=int, default=None, help="default: all 250")
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--cold", action="store_true", help="do not warm up Prefect and MLflow first")
    parser.add_argument("--shared-data", default=str(shared_data()))
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, seconds of work (CI)")
    args = parser.parse_args()
    if args.smoke:
        vars(args).update(SMOKE)

    work = Path(tempfile.mkdtemp(prefix="polyreason-bench-"))
    atexit.register(shutil.rmtree, work, True)  # registered first, so it runs after Prefect's own exit handlers
    from cli.environment import configure

    configure(work)
    from prefect import flow

    from components.config import load_profile_dict
    from flows.evaluation import evaluation_flow
    from tests.helpers.tiny_model import build_tiny_model

    model_dir = build_tiny_model(work / "tiny")
    profile = load_profile_dict({
        "name": "bench-evaluation",
        "project_dir": str(work),
        "evaluation": {
            "model": {"backend": "transformers", "model": str(model_dir), "dtype": "float32", "chat": True},
            "sampling": {"n": args.samples, "temperature": 0.8, "max_new_tokens": args.max_new_tokens,
                         "batch_size": 8, "seed": 1},
            "benchmarks": [{"name": "mgsm", "data_dir": f"{args.shared_data}/mgsm", "languages": ["en", "fr", "ja"],
                            "limit": args.prompts_per_language}],
        },
    })

    @flow
    def warm_up() -> int:
        return 1

    if not args.cold:
        from runtime import tracking

        warm_up()
        tracking.finish_run(tracking.open_run(profile.tracking, work, "warm-up"))
    start = time.perf_counter()
    first = evaluation_flow(profile)
    first_wall = time.perf_counter() - start
    summaries = [b.generations.summary for b in first.benchmarks.values()]
    backend = sum(s["backend_seconds"] for s in summaries) + sum(p.backend_seconds for p in first.pooled)
    tokens = sum(s["tokens"] for s in summaries)
    start = time.perf_counter()
    evaluation_flow(profile)
    cached_wall = time.perf_counter() - start

    print(f"first run: {first_wall:.2f} s wall, {backend:.2f} s in the backend ({tokens} tokens, "
          f"{tokens / backend:.0f} tok/s)")
    print(f"cached re-run: {cached_wall:.2f} s wall")
    samples = sum(s["rows"] for s in summaries)
    print(f"overhead: {first_wall - backend:.2f} s over {samples} samples; one-time set-up in a fresh process: "
          f"{json.dumps(one_time_costs())}")
    print(json.dumps({"overhead_ratio": round(first_wall / backend, 3), "cached_ratio": round(cached_wall / first_wall, 4)}))


if __name__ == "__main__":
    main()
