"""Fixed cost per command: what ``polyreason evaluate`` spends around its generation.

Runs the real command line (``polyreason evaluate``, a subprocess, as a user
would) on 16 MGSM prompts (en/fr/ja/th x 4) with the embedded Gemma-3-270M,
greedy, and reads the wall-clock start of the first backend call and the end of
the last one from the generation's manifest (``GenerationSummary``). It prints

* **start -> first backend call**: interpreter start, profile checks, Prefect
  (a temporary server, or the stack's), the MLflow run, the model load;
* **last return -> exit**: scoring, the report, MLflow logging, closing down;

first with no server configured (each command starts a temporary Prefect server
and writes the project's SQLite tracking store), then with the local stack
(``polyreason up``) running. Every measured command changes the sampling seed so
that it generates (a cache hit would skip the backend). The first command of a
fresh project also converts the GGUF once; it is reported apart as ``cold``.

For scale: lm-evaluation-harness's whole fixed cost on the same 16 prompts with
the same transformers generate was ~23 s on this 2-core machine.

    python bench/fixed_cost.py [--shared-data ../shared/data] [--runs 2] [--smoke]

``--smoke`` (CI): the tiny from-config model of the tests instead of Gemma, one English prompt
of 4 tokens, the cold command counted as the one without a server and one with the stack: the
same commands in about a minute, numbers meaningless.

Last line: ``{"no_server_fixed_s": …, "stack_fixed_s": …, …}`` (medians of the measured runs).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from locations import shared_data

REPO = Path(__file__).resolve().parents[1]
SERVER_VARIABLES = ("PREFECT_API_URL", "PREFECT_UI_API_URL", "MLFLOW_TRACKING_URI")


def profile_text(shared_data: Path, max_new_tokens: int, model: str = "embedded:gemma3-270m",
                 languages: tuple[str, ...] = ("en", "fr", "ja", "th"), limit: int = 4) -> str:
    return json.dumps({
        "name": "fixed-cost",
        "evaluation": {
            "model": {"backend": "transformers", "model": model, "dtype": "float32", "device": "cpu"},
            "sampling": {"n": 1, "temperature": 0.0, "max_new_tokens": max_new_tokens, "batch_size": 16, "seed": 0},
            "prompt": {"style": "instruction"},
            "benchmarks": [{"name": "mgsm", "data_dir": str(shared_data / "mgsm"), "languages": list(languages),
                            "limit": limit}],
        },
    }, indent=1)


def smoke_profile(project: Path, shared_data: Path) -> str:
    """The smoke mode's profile: the tests' tiny from-config model, one English prompt, 4 tokens."""
    sys.path.insert(0, str(REPO))
    from tests.helpers.tiny_model import build_tiny_model

    model = build_tiny_model(project / "tiny-model")
    return profile_text(shared_data, 4, str(model), ("en",), 1)


def polyreason() -> list[str]:
    """The command line of this checkout (``polyreason`` is ``python -m cli`` with it on the path)."""
    return [sys.executable, "-m", "cli"]


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in SERVER_VARIABLES}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def backend_window(project: Path, since: float) -> tuple[float, float]:
    """(first call start, last return) of the generations written after ``since``."""
    starts, ends = [], []
    for manifest in (project / "artifacts" / "generation").glob("*/.manifest.json"):
        for entry in json.loads(manifest.read_text()).values():
            summary = entry["ref"]["summary"]
            if (summary.get("first_call_at") or 0) >= since:
                starts.append(summary["first_call_at"])
                ends.append(summary["last_return_at"])
    if not starts:
        raise RuntimeError(f"no generation written under {project} after the command started (a cache hit?)")
    return min(starts), max(ends)


def evaluate(project: Path, seed: int, env: dict[str, str]) -> dict[str, float]:
    """One ``polyreason evaluate`` command: its wall time split around the backend window."""
    command = [*polyreason(), "evaluate", str(project / "profile.yaml"), f"evaluation.sampling.seed={seed}",
               "--project-dir", str(project)]
    start = time.time()
    done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True)
    end = time.time()
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-3000:]}")
    first, last = backend_window(project, start)
    return {"total_s": round(end - start, 2), "to_first_call_s": round(first - start, 2),
            "backend_s": round(last - first, 2), "after_last_s": round(end - last, 2),
            "fixed_s": round((first - start) + (end - last), 2)}


def show(label: str, row: dict[str, float]) -> None:
    print(f"{label:<22} total {row['total_s']:6.2f} s | start -> first call {row['to_first_call_s']:6.2f} s | "
          f"backend {row['backend_s']:6.2f} s | last return -> exit {row['after_last_s']:5.2f} s | "
          f"fixed {row['fixed_s']:6.2f} s", flush=True)


def median(rows: list[dict[str, float]], key: str) -> float:
    return round(statistics.median(row[key] for row in rows), 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared-data", type=Path, default=shared_data())
    parser.add_argument("--runs", type=int, default=2, help="measured commands per mode")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--keep", action="store_true", help="keep the scratch project")
    parser.add_argument("--smoke", action="store_true", help="tiny model, one prompt, one run per mode (CI)")
    args = parser.parse_args()

    project = Path(tempfile.mkdtemp(prefix="polyreason-fixed-cost-"))
    if args.smoke:
        args.runs = 1
        text = smoke_profile(project, args.shared_data.resolve())
    else:
        text = profile_text(args.shared_data.resolve(), args.max_new_tokens)
    (project / "profile.yaml").write_text(text)
    env = clean_env()
    seed = iter(range(1000))
    try:
        cold = evaluate(project, next(seed), env)
        show("cold (fresh project)", cold)
        plain = [cold] if args.smoke else [evaluate(project, next(seed), env) for _ in range(args.runs)]
        for index, row in enumerate(plain):
            show(f"no server #{index + 1}", row)

        start = time.time()
        subprocess.run([*polyreason(), "up", "--project-dir", str(project)], cwd=project, env=env, check=True,
                       capture_output=True, text=True)
        up_s = round(time.time() - start, 2)
        print(f"polyreason up: {up_s:.2f} s (once per session)", flush=True)
        try:
            stacked = [evaluate(project, next(seed), env) for _ in range(args.runs)]
        finally:
            subprocess.run([*polyreason(), "down", "--project-dir", str(project)], cwd=project, env=env,
                           capture_output=True, text=True)
        for index, row in enumerate(stacked):
            show(f"with the stack #{index + 1}", row)
    finally:
        if not args.keep:
            shutil.rmtree(project, ignore_errors=True)

    print(json.dumps({
        "no_server_fixed_s": median(plain, "fixed_s"), "no_server_to_first_call_s": median(plain, "to_first_call_s"),
        "no_server_after_last_s": median(plain, "after_last_s"), "stack_fixed_s": median(stacked, "fixed_s"),
        "stack_to_first_call_s": median(stacked, "to_first_call_s"), "stack_after_last_s": median(stacked, "after_last_s"),
        "cold_fixed_s": cold["fixed_s"], "up_s": up_s,
    }))


if __name__ == "__main__":
    main()
