"""Memory of ``polyreason score``: the peak resident memory of the command on a large JSONL file, against the file.

The file holds MGSM-like rows (``bench/score.py``'s synthetic rows: 13 languages, 4 samples
per problem, a ``<think>`` trace and a ``\\boxed{}`` answer) with each completion's trace
repeated to about ``--completion-kb`` kilobytes, up to ``--megabytes`` in all. The real
command runs twice in child processes (``python -m cli score FILE --out OUT``): once on the
first 52 rows (the baseline: imports, the lingua detector for the same languages, the
verifier) and once on the whole file; each child's peak is its own ``ru_maxrss``
(``os.wait4``), and once more on the file's first tenth. ``growth_mb`` is the whole file's peak
less the baseline's, also per largest row (``growth_per_largest_row``); ``tenth_to_file_mb`` is the
whole file's peak less the tenth's, per megabyte of file between them (``tenth_to_file_per_mb``):
what more file costs once a file is past the sizes where the fixed working sets fill up (a chunk
of two million completion characters, the bootstrap's batch of a quarter of a million numbers).
Scoring that holds its input grows with the file (a 200 MB file took 2.7 GB); scoring that
streams it and writes each scored row out as it is judged keeps a few numbers per problem.
The last line printed is one JSON object.

    python bench/score_memory.py [--megabytes 40] [--completion-kb 16] [--repo PATH] [--smoke]

``--repo``: the checkout whose command is measured (default: this one), to hold two versions
against each other on one machine. ``--smoke`` (CI): about 1 MB, numbers meaningless.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
from score import LANGUAGES, synthetic_row  # noqa: E402

BASELINE_ROWS = 52  # every language of the synthetic rows, four samples of one problem each


def long_row(rng: random.Random, index: int, kilobytes: int) -> dict:
    """A synthetic row whose trace is repeated to about ``kilobytes`` of completion."""
    row = synthetic_row(rng, index, sorted(LANGUAGES)[(index // 4) % len(LANGUAGES)])
    trace, answer = row["completion"].removeprefix("<think>\n").split("\n</think>\n", 1)
    repeats = max(1, kilobytes * 1024 // max(1, len(trace.encode())))
    return {**row, "completion": "<think>\n" + "\n\n".join([trace] * repeats) + "\n</think>\n" + answer}


def write_file(path: Path, megabytes: float, kilobytes: int) -> tuple[int, int]:
    """Rows up to ``megabytes``; (rows written, the largest row's bytes)."""
    rng, rows, largest, size = random.Random(0), 0, 0, 0
    with path.open("w", encoding="utf-8") as handle:
        while size < megabytes * 1e6 or rows < BASELINE_ROWS:
            line = json.dumps(long_row(rng, rows, kilobytes), ensure_ascii=False) + "\n"
            handle.write(line)
            rows, size = rows + 1, size + len(line.encode())
            largest = max(largest, len(line.encode()))
    return rows, largest


def peak_mb(repo: Path, rows: Path, out: Path) -> float:
    """The peak resident memory (MB) of ``polyreason score`` on ``rows`` run from ``repo``."""
    env = dict(os.environ, PYTHONPATH=str(repo))
    command = [sys.executable, "-m", "cli", "score", str(rows), "--verifier", "numeric", "--out", str(out)]
    process = subprocess.Popen(command, cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"score failed: {process.stderr.read().decode()[-2000:]}")
    return usage.ru_maxrss / 1024  # kilobytes on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=40)
    parser.add_argument("--completion-kb", type=int, default=16)
    parser.add_argument("--repo", type=Path, default=REPO)
    parser.add_argument("--smoke", action="store_true", help="about 1 MB (CI)")
    args = parser.parse_args()
    if args.smoke:
        args.megabytes, args.completion_kb = 1, 8
    with tempfile.TemporaryDirectory() as tmp:
        big, small, tenth = Path(tmp) / "rows.jsonl", Path(tmp) / "baseline.jsonl", Path(tmp) / "tenth.jsonl"
        rows, largest = write_file(big, args.megabytes, args.completion_kb)
        with big.open(encoding="utf-8") as handle:
            small.write_text("".join(next(handle) for _ in range(BASELINE_ROWS)), encoding="utf-8")
        with big.open(encoding="utf-8") as handle:
            tenth.write_text("".join(next(handle) for _ in range(max(BASELINE_ROWS, rows // 10))), encoding="utf-8")
        file_mb, tenth_mb = big.stat().st_size / 1e6, tenth.stat().st_size / 1e6
        baseline = peak_mb(args.repo, small, Path(tmp) / "baseline.json")
        at_tenth = baseline if rows // 10 <= BASELINE_ROWS else peak_mb(args.repo, tenth, Path(tmp) / "tenth.json")
        peak = peak_mb(args.repo, big, Path(tmp) / "out.json")
    growth, later = peak - baseline, peak - at_tenth
    per_row = growth * 1e6 / largest
    print(f"{rows} rows, {file_mb:.1f} MB, largest row {largest / 1e3:.1f} kB ({args.repo})")
    print(f"peak resident memory: {baseline:.0f} MB on {BASELINE_ROWS} rows, {at_tenth:.0f} MB on the first tenth "
          f"({tenth_mb:.1f} MB), {peak:.0f} MB on the file: +{growth:.0f} MB over {BASELINE_ROWS} rows "
          f"({growth / file_mb:.2f} x the file, {per_row:.0f} x the largest row), {later:+.0f} MB from the tenth to "
          f"the file ({later / max(file_mb - tenth_mb, 1e-9):+.3f} MB per MB)")
    print(json.dumps({"baseline_peak_mb": round(baseline, 1), "peak_mb": round(peak, 1), "growth_mb": round(growth, 1),
                      "growth_per_file_mb": round(growth / file_mb, 4), "growth_per_largest_row": round(per_row, 1),
                      "tenth_to_file_per_mb": round(later / max(file_mb - tenth_mb, 1e-9), 4),
                      "file_mb": round(file_mb, 1), "rows": rows, "largest_row_kb": round(largest / 1e3, 1),
                      "tenth_mb": round(tenth_mb, 1), "tenth_peak_mb": round(at_tenth, 1),
                      "tenth_to_file_mb": round(later, 1)}))


if __name__ == "__main__":
    main()
