#!/usr/bin/env bash
# Write constraints/gpu.txt: every package `pip install -e ".[gpu]"` installs on a Linux x86_64 CUDA host,
# pinned, resolved by pip itself without installing anything (`pip install --dry-run --report`).
#
# The resolution runs on this machine (CPython 3.11, Linux x86_64) against PyPI alone (`--isolated`:
# no local wheel folders, constraints or indexes from pip's configuration), where torch and vLLM are
# the CUDA builds. The result is what the README's GPU section installs:
#     pip install -c constraints/gpu.txt -e ".[gpu]"
# Run it again after changing a dependency in pyproject.toml (tests/unit/test_dependency_pins.py fails
# until the pins satisfy pyproject.toml again). Needs PyPI (online). Took 5 min 4 s on 2 loaded cores: pip builds
# DeepSpeed's metadata from its source distribution (DeepSpeed ships no wheel on PyPI).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

"$PY" -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip --isolated install -q --upgrade pip
"$WORK/venv/bin/python" -m pip --isolated install --dry-run --ignore-installed --quiet \
  --report "$WORK/report.json" -e "$ROOT[gpu]"
"$WORK/venv/bin/python" - "$WORK/report.json" "$ROOT/constraints/gpu.txt" <<'PY'
import json, platform, sys
report, out = json.load(open(sys.argv[1], encoding="utf-8")), sys.argv[2]
pins = sorted((item["metadata"]["name"].lower().replace("_", "-"), item["metadata"]["version"])
              for item in report["install"] if item["metadata"]["name"].lower() != "polyreason")
version = {name: v for name, v in pins}
header = [
    "# GPU host pins: pip install -c constraints/gpu.txt -e \".[gpu]\"",
    f"# Resolved by .ci/gpu-lock.sh (pip {report['pip_version']}, dry run, PyPI only) for CPython "
    f"{platform.python_version()} on Linux {platform.machine()}: "
    f"vllm {version['vllm']}, trl {version['trl']}, torch {version['torch']}, transformers {version['transformers']}.",
]
with open(out, "w", encoding="utf-8") as handle:
    handle.write("\n".join(header + [f"{name}=={v}" for name, v in pins]) + "\n")
print(f"gpu-lock: {len(pins)} pins -> {out} ({header[1][2:]})")
PY
