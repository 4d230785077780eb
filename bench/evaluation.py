"""Evaluation-flow overhead on the tiny from-config model.

Prints (1) the flow's wall time divided by the time the backend spent generating
(target <= 1.10: flow, scoring and logging add at most 10%) and (2) the cached
re-run's wall time divided by the first run's (target <= 0.05). Before timing,
the temporary Prefect server is started (a warm-up flow) and the project's MLflow
store is created (a warm-up run), as a project that has run before has both;
``--cold`` times them too and prints that figure as well.
Last line: {"overhead_ratio": ..., "cached_ratio": ...}.

    python bench/evaluation.py [--prompts-per-language 48] [--max-new-tokens 128] [--cold]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--prompts-per-language", type=int, default=48)
    parser.add_argument("--samples", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--cold", action="store_true", help="do not warm up Prefect and MLflow first")
    parser.add_argument("--shared-data", default=str(REPO.parent / "shared" / "data"))
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="polyreason-bench-"))
    from flows.runtime import configure

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
        from tasks import tracking

        warm_up()
        tracking.finish_run(tracking.open_run(profile.tracking, work, "warm-up"))
    start = time.perf_counter()
    first = evaluation_flow(profile)
    first_wall = time.perf_counter() - start
    backend = sum(b["generation"]["backend_seconds"] for b in first["benchmarks"].values())
    tokens = sum(b["generation"]["tokens"] for b in first["benchmarks"].values())
    start = time.perf_counter()
    evaluation_flow(profile)
    cached_wall = time.perf_counter() - start

    print(f"first run: {first_wall:.2f} s wall, {backend:.2f} s in the backend ({tokens} tokens, "
          f"{tokens / backend:.0f} tok/s)")
    print(f"cached re-run: {cached_wall:.2f} s wall")
    print(json.dumps({"overhead_ratio": round(first_wall / backend, 3), "cached_ratio": round(cached_wall / first_wall, 4)}))


if __name__ == "__main__":
    main()
