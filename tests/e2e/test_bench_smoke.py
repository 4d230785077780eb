"""Every bench runs in its smoke mode, so a bench that breaks fails CI.

Each script of ``bench/`` runs as a user runs it (``python bench/NAME.py --smoke``, a
subprocess in a clean environment: no tracking or Prefect server of this session) and must
exit 0 with a last line that is one JSON object holding the keys its docstring promises.
The smoke modes use tiny sizes (the tests' tiny from-config model, a few rows or prompts),
need no upstream checkout and no hub, and take seconds to about a minute each; their numbers
mean nothing and are not checked. ``gpu_check.py --smoke`` is its CPU dry-run (``--device cpu
--steps 2``, CI's vLLM tests collected where vLLM is installed, else reported skipped).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"
# script -> (arguments, keys of the last line, check of the parsed last line)
SMOKE = {
    "conformance.py": (["--smoke"], {"code", "smoke", "skipped", "corpus", "lcpr", "math_verify", "stress"},
                       lambda out: out["skipped"] == {}
                       and out["math_verify"]["verifiers"]["trusted"]["unexplained_numeric_gold"] == 0),
    "evaluation.py": (["--smoke"], {"overhead_ratio", "cached_ratio"}, None),
    "fanout.py": (["--smoke"], {"sequential_s", "fanned_out_s", "ratio", "identical"},
                  lambda out: out["identical"] is True),
    "fixed_cost.py": (["--smoke"], {"no_server_fixed_s", "no_server_to_first_call_s", "no_server_after_last_s",
                                    "stack_fixed_s", "stack_to_first_call_s", "stack_after_last_s",
                                    "cold_fixed_s", "up_s"}, None),
    "generation.py": (["--smoke"], {"best_backend", "tokens_per_s", "roofline_fraction"}, None),
    "gpu_check.py": (["--smoke"], {"environment", "sft", "grpo", "generation", "agreement", "vllm_paths", "failed"},
                     lambda out: out["failed"] == []),
    "grpo_overhead.py": (["--smoke"], {"adamame", "pcs", "softlc"}, None),
    "lcpr_traces.py": (["--smoke"], {"traces", "seconds", "rules"}, lambda out: set(out["rules"]) == {"adamame"}),
    "plan_kv_cap.py": (["--smoke"], {"gpu", "profiles"},
                       lambda out: all(r["capped"][0] >= r["uncapped"][0] for r in out["profiles"].values())),
    "pooled_generation.py": (["--smoke"], {"separate_s", "pooled_s", "speedup", "identical"},
                             lambda out: out["identical"] is True),
    "reward_scale.py": (["--smoke"], {"pcs_16k_ms", "softlc_16k_ms", "adamame_16k_ms", "thread_scaling"}, None),
    "score.py": (["--smoke"], {"rows_per_s", "detector_build_s", "long_rows_per_s", "long_trace_chars"},
                 lambda out: out["long_trace_chars"] >= 7500),
    "score_memory.py": (["--smoke"], {"file_mb", "peak_mb", "baseline_peak_mb", "growth_mb", "growth_per_file_mb",
                                       "growth_per_largest_row", "tenth_peak_mb", "tenth_to_file_per_mb"}, None),
}
# benches whose smoke run reads the full benchmark copies beside the repository (``bench/locations.py``): skipped,
# saying so, where those are absent (a clone on its own); CI has them
READS_SHARED_DATA = {"conformance.py", "evaluation.py", "fanout.py", "fixed_cost.py", "pooled_generation.py",
                     "reward_scale.py"}
# bench files that are not benches run here, and why
NOT_RUN = {
    "gpu_check.sh": "installs the travelling wheels on a GPU host; its Python part runs here (gpu_check.py)",
}
SERVER_VARIABLES = ("PREFECT_API_URL", "PREFECT_UI_API_URL", "MLFLOW_TRACKING_URI")


def is_script(path: Path) -> bool:
    """A bench script: it has an ``if __name__ == "__main__":`` block (helpers such as locations.py do not)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) for node in tree.body)


def test_every_bench_has_a_smoke_run():
    scripts = {p.name for p in BENCH.glob("*.py") if is_script(p)}
    others = {p.name for p in BENCH.iterdir() if p.is_file() and p.suffix != ".py"}
    assert scripts == set(SMOKE), "add the new bench's smoke run to SMOKE (or fix the name)"
    assert others == set(NOT_RUN)


@pytest.mark.parametrize("script", sorted(SMOKE))
def test_bench_smoke(script, tmp_path, request):
    if script in READS_SHARED_DATA:
        request.getfixturevalue("shared_data")  # skips, naming the path, where the copies are absent
    arguments, keys, check = SMOKE[script]
    env = {k: v for k, v in os.environ.items() if k not in SERVER_VARIABLES}
    env.update(PYTHONPATH=str(REPO), MPLBACKEND="Agg")
    done = subprocess.run([sys.executable, str(BENCH / script), *arguments], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{script} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    last = done.stdout.strip().splitlines()[-1]
    out = json.loads(last)
    assert isinstance(out, dict) and keys <= set(out), f"{script}: last line {last[:500]}"
    assert check is None or check(out), f"{script}: last line {last[:2000]}"
