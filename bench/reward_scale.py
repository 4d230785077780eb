"""Language-reward cost at the lengths GRPO trains with: ms per completion at 500 / 4,000 / 16,000 characters.

Completions are French MGSM text laid out as reasoning steps: each step is a connector,
one or two sentences drawn from the French MGSM questions and a short conclusion with
arithmetic (``Il reste seize pommes, donc a × b = c.``); the connector and conclusion words
make steps distinct (digits and math are cleaned away before detection, so without them
the same sentence would recur and be detected once). Steps are separated by blank lines
inside ``<think>…</think>``, and the response after it
is ``La réponse est \\boxed{g}.`` with the right ``g`` (so every reward runs its full path:
format, verifier, language detection, repetition). Every batch is drawn afresh, so no
detection is reused from an earlier call; within a batch the steps are distinct.

Each reward (``components.rewards`` registry, default parameters) is called on
``--batch`` completions per call, as trl calls it once per generation batch; the time per
completion is the median of ``--repeats`` calls (the spread, min–max, is printed too). The
``<reward> cpu`` rows give the CPU time of the same calls (all threads): the work done, which
other jobs on the machine inflate much less than the wall time.
Below the rewards, the parts their costs are made of, timed alone on fresh texts: the
repetition gate, cleaning a whole completion for detection (Python: it holds the GIL), and
lingua alone on the cleaned SLC steps (``lingua.steps``) and on the cleaned whole
completion (``lingua.whole``) — the floor any reward that detects them pays.

lingua's parallel API runs on rayon's global pool, sized by ``RAYON_NUM_THREADS`` when the
process starts, so each thread count runs in its own child process (``--threads N`` runs
one in-process); ``--rounds`` alternates 1- and 2-thread children so that a load change
on a shared machine hits both alike. The scaling is time with 1 thread / time with 2
threads at 16,000 characters. The machine load (``os.getloadavg``) and each child's CPU
seconds per wall second are printed: other jobs sharing the cores make the numbers noisy.

    python bench/reward_scale.py [--batch 32 --repeats 3 --rounds 2] [--smoke]

``--smoke`` (CI): 2 completions per call, one call per cell, one round: seconds, numbers meaningless.

The last line is one JSON object ``{"pcs_16k_ms", "softlc_16k_ms", "adamame_16k_ms",
"thread_scaling"}``: ms per 16,000-character completion with 2 threads, and the PCS
reward's speed-up from 1 to 2 threads.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from locations import shared_data  # noqa: E402

MGSM_FR = shared_data() / "mgsm" / "mgsm_fr.tsv"
SIZES = (500, 4_000, 16_000)
REWARDS = ("pcs", "softlc", "adamame")


def sentences(path: Path = MGSM_FR) -> list[str]:
    """Sentences of the French MGSM questions (at least 10 characters)."""
    rows = [line.split("\t")[0] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [s.strip() for q in rows for s in re.split(r"(?<=[.?!])\s+", q) if len(s.strip()) >= 10]


CONNECTORS = ("Ensuite,", "Puis", "Donc", "Alors", "Maintenant,", "D'abord,", "Enfin,", "Vérifions :")
COUNTS = ("un", "deux", "trois", "quatre", "cinq", "six", "sept", "huit", "neuf", "dix", "onze", "douze",
          "treize", "quatorze", "quinze", "seize", "vingt", "trente", "quarante", "cinquante")
THINGS = ("pommes", "œufs", "euros", "livres", "crayons", "minutes", "heures", "billes", "gâteaux", "élèves")


def completion(pool: list[str], chars: int, rng: random.Random) -> tuple[str, str]:
    """(completion, gold): reasoning steps in a think block, then a boxed answer, about ``chars`` long."""
    gold = str(rng.randint(2, 999))
    tail = f"</think>La réponse est \\boxed{{{gold}}}."
    steps: list[str] = []
    size = len("<think>") + len(tail)
    while size < chars:
        a, b = rng.randint(2, 99), rng.randint(2, 99)
        step = (f"{rng.choice(CONNECTORS)} " + " ".join(rng.sample(pool, rng.randint(1, 2)))
                + f" Il reste {rng.choice(COUNTS)} {rng.choice(THINGS)}, donc {a} × {b} = {a * b}.")
        steps.append(step)
        size += len(step) + 2
    return "<think>" + "\n\n".join(steps) + tail, gold


def batch(pool: list[str], chars: int, size: int, seed: int) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    pairs = [completion(pool, chars, rng) for _ in range(size)]
    return [c for c, _ in pairs], [g for _, g in pairs]


def time_call(fn, completions: list[str], golds: list[str]) -> tuple[float, float]:
    """Wall and CPU (all threads of the process) milliseconds per completion of one call over the batch."""
    start, cpu = time.perf_counter(), time.process_time()
    fn(["q"] * len(completions), completions, gold=golds, lang=["fr"] * len(completions))
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return wall * 1e3 / len(completions), cpu * 1e3 / len(completions)


def parts(completions: list[str]) -> dict[str, float]:
    """What the rewards' costs are made of, ms per completion: the repetition gate, cleaning a
    whole completion for detection (Python, holds the GIL), and lingua alone (parallel API) on
    the cleaned steps SLC detects and on the cleaned whole completion softlc detects."""
    from components.language import clean_for_detection, get_detector
    from components.metrics.slc import step_units
    from components.rewards.repetition import has_degenerate_repetition
    from components.verification import split_think

    detector = get_detector(["fr"])
    steps = [unit for text in completions for unit in step_units(split_think(text).trace)]
    timings = {}
    start = time.perf_counter()
    for text in completions:
        has_degenerate_repetition(text)
    timings["pcs.repetition"] = time.perf_counter() - start
    start = time.perf_counter()
    cleaned = [clean_for_detection(text) for text in completions]
    timings["clean.whole"] = time.perf_counter() - start
    start = time.perf_counter()
    detector.detect_many(steps, clean=False)
    timings["lingua.steps"] = time.perf_counter() - start
    start = time.perf_counter()
    detector.detect_many(cleaned, clean=False)
    timings["lingua.whole"] = time.perf_counter() - start
    return {name: seconds * 1e3 / len(completions) for name, seconds in timings.items()}


def measure(args: argparse.Namespace) -> dict:
    """All rewards at all sizes in this process: {reward: {size: [ms, ...]}}."""
    from components.language import get_detector
    from components.rewards import build_reward

    pool = sentences()
    get_detector(["fr"])  # built once per process, not timed
    rewards = {name: build_reward(name, {}, languages=["fr"]) for name in REWARDS}
    warm, warm_gold = batch(pool, 500, 4, seed=-1)
    for reward in rewards.values():
        reward(["q"] * 4, warm, gold=warm_gold, lang=["fr"] * 4)
    out: dict[str, dict[int, list[float]]] = {name: {} for name in REWARDS}
    seed = 0
    for chars in SIZES:
        for repeat in range(args.repeats):
            for name, reward in rewards.items():
                seed += 1
                texts, golds = batch(pool, chars, args.batch, seed)
                wall, cpu = time_call(reward, texts, golds)
                out[name].setdefault(chars, []).append(wall)
                out.setdefault(f"{name} cpu", {}).setdefault(chars, []).append(cpu)
            seed += 1
            texts, _ = batch(pool, chars, args.batch, seed)
            for part, value in parts(texts).items():
                out.setdefault(part, {}).setdefault(chars, []).append(value)
    return out


def child(threads: int, args: argparse.Namespace) -> dict:
    env = {**os.environ, "RAYON_NUM_THREADS": str(threads), "PYTHONPATH": str(REPO)}
    command = [sys.executable, __file__, "--threads", str(threads), "--batch", str(args.batch),
               "--repeats", str(args.repeats)]
    before, start = os.times(), time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    after, wall = os.times(), time.perf_counter() - start
    cpu = (after.children_user + after.children_system) - (before.children_user + before.children_system)
    print(f"  child with {threads} thread(s): {wall:.1f} s wall, {cpu / wall:.2f} CPU s per wall s")
    return json.loads(done.stdout.strip().splitlines()[-1])


def merged(runs: list[dict]) -> dict:
    out: dict = {}
    for run in runs:
        for name, cells in run.items():
            for size, values in cells.items():
                out.setdefault(name, {}).setdefault(size, []).extend(values)
    return out


def summary(values: list[float]) -> str:
    return f"{statistics.median(values):7.2f} ({min(values):.2f}-{max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=32, help="completions per reward call")
    parser.add_argument("--repeats", type=int, default=3, help="calls per cell in each child")
    parser.add_argument("--rounds", type=int, default=2, help="alternating 1-/2-thread children")
    parser.add_argument("--threads", type=int, default=None, help="(internal) measure in this process")
    parser.add_argument("--smoke", action="store_true", help="2 completions per call, one call, one round (CI)")
    args = parser.parse_args()
    if args.smoke:
        args.batch, args.repeats, args.rounds = 2, 1, 1
    if args.threads is not None:
        print(json.dumps(measure(args)))
        return
    print(f"load average before: {os.getloadavg()}  cores: {os.cpu_count()}")
    runs: dict[int, list[dict]] = {1: [], 2: []}
    for _ in range(args.rounds):
        for threads in (1, 2):
            runs[threads].append(child(threads, args))
    results = {threads: merged(found) for threads, found in runs.items()}
    print(f"load average after:  {os.getloadavg()}")
    calls = args.repeats * args.rounds
    print(f"ms per completion, median (min-max) of {calls} calls of {args.batch} completions")
    print(f"{'reward':16s}{'threads':>8s}" + "".join(f"{c:>22,d}" for c in SIZES) + f"{'1->2 threads':>14s}")
    for name in results[1]:
        for threads, result in results.items():
            cells = "".join(f"{summary(result[name][str(c)]):>22s}" for c in SIZES)
            scale = statistics.median(results[1][name]["16000"]) / statistics.median(results[2][name]["16000"])
            print(f"{name:16s}{threads:8d}{cells}" + (f"{scale:13.2f}x" if threads == 2 else ""))
    at16 = {name: statistics.median(results[2][name]["16000"]) for name in REWARDS}
    scaling = statistics.median(results[1]["pcs"]["16000"]) / at16["pcs"]
    print(json.dumps({"pcs_16k_ms": round(at16["pcs"], 2), "softlc_16k_ms": round(at16["softlc"], 2),
                      "adamame_16k_ms": round(at16["adamame"], 2), "thread_scaling": round(scaling, 2)}))


if __name__ == "__main__":
    main()
