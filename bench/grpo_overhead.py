"""GRPO step-time overhead of the language-aware rewards over plain accuracy.

On the tiny from-config model with identical trl settings (same seed, data,
LoRA, generation length), trains ``--steps`` steps with each reward, in
``--rounds`` interleaved rounds (accuracy, adamame, pcs, softlc, accuracy, …) so
that load drifts of a shared machine hit every reward alike, and compares the
median of trl's per-step ``step_time`` after ``--warmup`` steps. PCS says its
lightweight detection is the point: the target is a ratio ≤ 1.05.

    python bench/grpo_overhead.py [--steps 10 --rounds 3 --completion-tokens 32] [--smoke]

``--smoke`` (CI): 2 steps, no warm-up, one round, 8 tokens: the four trainings in seconds,
ratios meaningless.

The last line is one JSON object ``{"adamame": r, "pcs": r, "softlc": r}`` of
step-time ratios to accuracy.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

REWARDS = ["accuracy", "adamame", "pcs", "softlc"]
QUESTIONS = [
    ("fr", "Janet a 16 œufs et en vend 3 au marché. Combien lui en reste-t-il ?"),
    ("ja", "ジャネットは卵を16個持っていて、3個を市場で売ります。残りはいくつですか？"),
    ("pt", "A Janet tem 16 ovos e vende 3 no mercado. Quantos ovos restam?"),
    ("th", "เจเน็ตมีไข่ 16 ฟองและขายไป 3 ฟองที่ตลาด เหลือไข่กี่ฟอง"),
    ("ko", "재닛은 달걀 16개를 가지고 있고 시장에서 3개를 팝니다. 몇 개가 남습니까?"),
    ("en", "Janet has 16 eggs and sells 3 at the market. How many are left?"),
    ("de", "Janet hat 16 Eier und verkauft 3 auf dem Markt. Wie viele bleiben übrig?"),
    ("es", "Janet tiene 16 huevos y vende 3 en el mercado. ¿Cuántos le quedan?"),
]


def make_job(work: Path, reward: str, args: argparse.Namespace):
    from components.settings import GRPOStageSettings
    from components.training.runner import TrainingJob

    data = work / "data.jsonl"
    if not data.is_file():
        rows = [{"id": f"q{i}", "lang": lang, "question": q, "gold": "13"} for i, (lang, q) in enumerate(QUESTIONS)]
        data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    # the tiny random model writes no think block: PCS then reads its answer leniently (its strict
    # default looks only after <think>…</think> and refuses require_think=false with it)
    params = {"require_think": False, "extraction": "lenient"} if reward == "pcs" else {}
    settings = GRPOStageSettings(
        model={"model": str(work / "model"), "device": "cpu", "dtype": "float32"}, dataset=str(data),
        rewards=[{"name": reward, "params": params}], max_steps=args.steps, per_device_train_batch_size=8,
        sampling={"n": 4, "max_new_tokens": args.completion_tokens, "temperature": 1.0, "seed": 0}, beta=0.001,
        save_steps=10_000, resume=False, audit={"enabled": False})
    return TrainingJob(stage="grpo", grpo=settings, model=str(work / "model"), dataset=str(data))


def step_times(work: Path, reward: str, args: argparse.Namespace) -> list[float]:
    """trl's ``step_time`` of every step after the warm-up, for one short training run."""
    from components.training.grpo import build_trainer

    out = work / f"run-{reward}-{time.time_ns()}"
    trainer, _ = build_trainer(make_job(work, reward, args), out, None, None)
    trainer.train()
    times = [log["step_time"] for log in trainer.state.log_history if "step_time" in log]
    return times[args.warmup:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--completion-tokens", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1: robust on a shared machine)")
    parser.add_argument("--smoke", action="store_true", help="2 steps, one round, 8 tokens (CI)")
    args = parser.parse_args()
    if args.smoke:
        args.steps, args.warmup, args.rounds, args.completion_tokens = 2, 0, 1, 8

    import logging

    import torch
    import transformers

    torch.set_num_threads(args.threads)
    transformers.logging.set_verbosity_error()
    logging.disable(logging.WARNING)
    from components.language import get_detector
    from tests.helpers.tiny_model import build_tiny_model

    with tempfile.TemporaryDirectory(prefix="grpo-overhead-") as tmp:
        work = Path(tmp)
        build_tiny_model(work / "model")
        get_detector([lang for lang, _ in QUESTIONS])  # built once per process, outside the timings
        samples: dict[str, list[float]] = {name: [] for name in REWARDS}
        for round_index in range(args.rounds):
            for name in REWARDS:
                samples[name] += step_times(work, name, args)
            print(f"round {round_index + 1}: " + ", ".join(
                f"{n} {statistics.median(samples[n]) * 1000:.1f} ms" for n in REWARDS), file=sys.stderr)
    median = {name: statistics.median(values) for name, values in samples.items()}
    for name in REWARDS:
        print(f"{name:9s} median step {median[name] * 1000:7.1f} ms  (n={len(samples[name])})")
    ratios = {name: round(median[name] / median["accuracy"], 4) for name in REWARDS[1:]}
    print(json.dumps(ratios))


if __name__ == "__main__":
    from components.catalog import install

    install()  # settings check registry names against the project's registries, as on the command line
    main()
