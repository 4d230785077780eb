"""Fanned-out evaluations against one after another: tiny from-config models (3 by default), each way timed.

Each way evaluates the same models (different random weights) on MGSM
en/fr/ja in a fresh project: sequentially (each model's evaluation generating in
this process, as the recipe does without fan-out), then fanned out
(``execution.runner: threads``, ``--workers`` tasks at once, each model's
generation in a process of its own, then the same evaluations publishing,
scoring and logging from the journals). The Prefect server and the MLflow store
are warmed up first. Prints both wall times, their ratio, and whether the
generations files are byte-identical. On this 2-core machine the tasks share
two cores, and each pays its own interpreter, torch import and model load, so
little gain is expected; on a node with a GPU per task the generation times
divide by the number of tasks.

Last line: {"sequential_s": ..., "fanned_out_s": ..., "ratio": ..., "identical": ...}. ``--smoke`` (CI):
one problem per language, 4 new tokens, two models.

    python bench/fanout.py [--prompts-per-language 8] [--max-new-tokens 32] [--workers 2] [--models 3] [--smoke]
"""

from __future__ import annotations

import argparse
import atexit
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from locations import shared_data

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
SMOKE = {"prompts_per_language": 1, "max_new_tokens": 4, "models": 2}  # two models still fan out on two workers


def profile_dict(project: Path, data: str, args, execution: dict) -> dict:
    return {
        "name": "bench-fanout", "project_dir": str(project), "execution": execution,
        "tracking": {"tracking_uri": f"sqlite:///{project.parent / 'mlruns' / 'mlflow.db'}"},
        "evaluation": {
            "model": {"backend": "transformers", "model": "unused", "dtype": "float32", "chat": True},
            "sampling": {"n": 1, "max_new_tokens": args.max_new_tokens, "batch_size": 8},
            "benchmarks": [{"name": "mgsm", "data_dir": f"{data}/mgsm", "languages": ["en", "fr", "ja"],
                            "limit": args.prompts_per_language}],
        },
    }


def evaluate_models(project: Path, models: list[Path], args, execution: dict) -> float:
    """Wall seconds to evaluate ``models`` in ``project`` (fanned out when ``execution`` says so)."""
    from components.config import load_profile_dict
    from flows.evaluation import evaluation_flow
    from flows.fanout import evaluation_fanout_flow
    from runtime.project import prepared
    from tasks.models import resolve_model_task

    profile, root = prepared(load_profile_dict(profile_dict(project, args.shared_data, args, execution)))
    start = time.perf_counter()
    refs = [resolve_model_task(profile.evaluation.model.model_copy(update={"model": str(m)}), root, f"m{i}")
            for i, m in enumerate(models)]
    if profile.execution.fans_out:
        evaluation_fanout_flow(profile, refs)
    for ref in refs:
        evaluation_flow(profile, ref)
    return time.perf_counter() - start


def generations(project: Path) -> dict[str, bytes]:
    return {str(p.relative_to(project)): p.read_bytes()
            for p in sorted(project.glob("artifacts/generation/*/generations.jsonl"))}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--prompts-per-language", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--models", type=int, default=3, help="tiny models evaluated each way")
    parser.add_argument("--shared-data", default=str(shared_data()))
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, seconds of work (CI)")
    args = parser.parse_args()
    if args.smoke:
        vars(args).update(SMOKE)

    work = Path(tempfile.mkdtemp(prefix="polyreason-bench-"))
    atexit.register(shutil.rmtree, work, True)
    from cli.environment import configure

    configure(work)
    from prefect import flow

    from components.settings import TrackingSettings
    from runtime import tracking
    from tests.helpers.tiny_model import build_tiny_model

    models = [build_tiny_model(work / f"model-{seed}", seed=seed) for seed in range(args.models)]

    @flow
    def warm_up() -> int:
        return 1

    warm_up()
    store = TrackingSettings(tracking_uri=f"sqlite:///{work / 'mlruns' / 'mlflow.db'}")
    tracking.finish_run(tracking.open_run(store, work, "warm-up"))
    sequential = evaluate_models(work / "sequential", models, args, {})
    fanned = evaluate_models(work / "fanned-out", models, args, {"runner": "threads", "workers": args.workers,
                                                                "cpu_threads": max(1, 2 // args.workers)})
    identical = generations(work / "sequential") == generations(work / "fanned-out")
    print(f"{args.models} evaluations one after another: {sequential:.1f} s; fanned out on {args.workers} workers: "
          f"{fanned:.1f} s; generations identical: {identical}")
    print(json.dumps({"sequential_s": round(sequential, 2), "fanned_out_s": round(fanned, 2),
                      "ratio": round(fanned / sequential, 3), "identical": identical, "workers": args.workers,
                      "models": args.models}))


if __name__ == "__main__":
    main()
