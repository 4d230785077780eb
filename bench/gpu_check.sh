#!/usr/bin/env bash
# GPU check: the tiny-model SFT and GRPO steps and the transformers generation in bf16 on one CUDA
# device, with step times and peak memory, greedy CUDA-vs-CPU agreement, then CI's vLLM tests on
# CUDA in bf16 (trl's GRPO with vLLM colocated, trl's client against trl's server, SFT then vLLM
# with the adapter, a GPU profile's evaluation) where vLLM and pytest are installed
# (bench/gpu_check.py). A two-GPU section runs server-mode GRPO (trainer and vLLM server on two
# devices, trl's NCCL weight transfer) only where two CUDA devices exist; elsewhere its row says
# "not verified on this host".
# Before its JSON line it prints a table: each path, run / skipped (why) / failed
# (bench/gpu_verdict.py). Exit code 0 only when every path ran on the GPU and passed; 1 when a part
# failed or disagreed (e.g. same_greedy_as_cpu false); 2 when nothing failed but some path was not
# verified (no CUDA, no vLLM, no pytest, a test's own skip, a one-GPU host's two-GPU section).
# One command within 10 minutes: installation of the travelling wheels, then the check under its
# time limit (GPU_CHECK_LIMIT_S, 540 s), of which each pytest part gets GPU_CHECK_VLLM_LIMIT_S (300 s).
# The vLLM parts have not run on CUDA yet (no GPU was lent while they were written); vLLM itself is
# too large to travel with the checkout, so a host without network and without vLLM reports them
# skipped and the check exits 2.
#
# The GPU host has torch, transformers, peft and accelerate, but not trl, lingua, math-verify
# (nor prefect or mlflow, which the check does not need: it calls polyreason's components
# directly). Those wheels travel with the checkout, in .whl/gpu-check/ (git-ignored):
#
#   1. Where there is network (PyPI), with the GPU host's Python version and platform:
#        bash bench/gpu_check.sh prepare [--python-version 3.11[,3.12]] [--no-lingua] [--lean]
#      downloads the pinned wheels below (the versions the project is tested with) and nothing
#      else: pip's --no-deps, so torch & co. are not fetched a second time. For Python 3.11:
#      158 MiB, of which lingua-language-detector is 92, pyarrow 48, pandas 12. --no-lingua
#      leaves lingua out (the GRPO part then trains with the accuracy reward only, and says so);
#      --lean also leaves out pydantic and pyyaml, which hosts with transformers usually have
#      (62 MiB: under a 64 MiB limit on what a job may carry). Several Python versions may be
#      given; each wheel's tags tell pip at install time which one fits.
#   2. Copy the checkout with .whl/gpu-check/ to the GPU host (e.g. as an ignored path the job
#      carries), then there:
#        bash bench/gpu_check.sh [--steps 6]
#      installs, with `pip install --no-index --find-links .whl/gpu-check`, each of the packages
#      below that does not import yet (nothing that is already installed is replaced), and runs
#      the check under a time limit. Its last line is one JSON object; exit codes as above.
#   A host with network installs the GPU pins instead (pip install -c constraints/gpu.txt -e ".[gpu]"
#   pytest): then the vLLM part runs too.
#
#   bash bench/gpu_check.sh --smoke   (any machine, no GPU, installs nothing): says which packages a
#      GPU host would install and from where, then runs the check on the CPU with tiny sizes
#      (gpu_check.py --smoke: float32, 2 steps, the vLLM tests collected, not run); exits 0 unless a
#      part failed, and its table still lists every path as not run on a GPU.
#
# Environment: PYTHON (default python3), GPU_CHECK_WHEELS (default .whl/gpu-check),
# GPU_CHECK_LIMIT_S (default 540: the check's own time limit, after installation),
# GPU_CHECK_VLLM_LIMIT_S (default 300: the vLLM tests' share of it).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
WHEELS="${GPU_CHECK_WHEELS:-$ROOT/.whl/gpu-check}"
LIMIT="${GPU_CHECK_LIMIT_S:-540}"

# What trl, datasets, lingua and math-verify need beyond torch/transformers/peft/accelerate and
# their own dependencies (computed from the installed metadata of the tested environment), plus
# pydantic and pyyaml, which polyreason's settings import. Format: "import-name distribution==version".
PACKAGES=(
  "trl trl==1.16.0"
  "datasets datasets==5.2.0"
  "dill dill==0.4.1"
  "multiprocess multiprocess==0.70.19"
  "xxhash xxhash==4.1.0"
  "pandas pandas==3.1.1"
  "dateutil python-dateutil==2.9.0.post0"
  "six six==1.17.0"
  "pyarrow pyarrow==25.0.1"
  "math_verify math-verify==0.9.0"
  "latex2sympy2_extended latex2sympy2-extended==1.11.0"
  "antlr4 antlr4-python3-runtime==4.13.2"
  "pydantic pydantic==2.14.4"
  "pydantic_core pydantic-core==2.50.5"
  "annotated_types annotated-types==0.8.0"
  "typing_inspection typing-inspection==0.4.5"
  "yaml pyyaml==6.0.4"
  "lingua lingua-language-detector==2.1.1"
)

prepare() {
  local pyvers="" lingua=1 lean=0
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --python-version) pyvers="$2"; shift 2 ;;
      --no-lingua) lingua=0; shift ;;
      --lean) lingua=0; lean=1; shift ;;
      *) echo "gpu_check prepare: unknown option $1" >&2; exit 2 ;;
    esac
  done
  pyvers="${pyvers:-$("$PY" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')}"
  local wanted=()
  for entry in "${PACKAGES[@]}"; do
    [[ $lingua == 0 && $entry == lingua* ]] && continue
    [[ $lean == 1 && ( $entry == pydantic* || $entry == annotated* || $entry == typing_inspection* || $entry == yaml* ) ]] && continue
    wanted+=("${entry#* }")
  done
  mkdir -p "$WHEELS"
  for pyver in ${pyvers//,/ }; do
    echo "gpu_check: downloading ${#wanted[@]} wheels for Python $pyver (manylinux x86_64) into $WHEELS"
    "$PY" -m pip download --disable-pip-version-check --quiet --no-deps --only-binary=:all: \
      --dest "$WHEELS" --python-version "$pyver" --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
      --platform any "${wanted[@]}"
  done
  du -sh "$WHEELS"
}

missing_packages() {  # the requirements of PACKAGES whose module does not import
  for entry in "${PACKAGES[@]}"; do
    "$PY" -c "import ${entry%% *}" 2>/dev/null || echo "${entry#* }"
  done
}

install_missing() {
  local missing=()
  mapfile -t missing < <(missing_packages)
  if [[ ${#missing[@]} -eq 0 ]]; then
    echo "gpu_check: every package the check needs is installed"
    return
  fi
  if [[ ! -d "$WHEELS" ]]; then
    echo "gpu_check: missing ${missing[*]} and no wheel folder at $WHEELS (run 'bash bench/gpu_check.sh prepare' where there is network, and bring the folder)" >&2
    exit 3
  fi
  local available=()
  for requirement in "${missing[@]}"; do
    local name="${requirement%%==*}"
    if ls "$WHEELS" | grep -qi "^${name//-/_}-"; then
      available+=("$requirement")
    else
      echo "gpu_check: $requirement is not installed and has no wheel in $WHEELS: skipped" >&2
    fi
  done
  [[ ${#available[@]} -eq 0 ]] && return
  echo "gpu_check: installing from $WHEELS (no index) into $("$PY" -V 2>&1): ${available[*]}"
  if ! "$PY" -m pip install --disable-pip-version-check --quiet --no-index --find-links "$WHEELS" "${available[@]}"; then
    echo "gpu_check: installation failed; the wheels' Python tags must match $("$PY" -V 2>&1) (prepare --python-version X.Y)" >&2
    exit 4
  fi
}

run_check() {
  start=$(date +%s)
  install_missing
  echo "gpu_check: installation took $(( $(date +%s) - start )) s; the check has ${LIMIT} s"
  export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
  export MLFLOW_DISABLE_TELEMETRY=true DO_NOT_TRACK=1 PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
  cd "$ROOT"
  timeout --kill-after=20 "$LIMIT" "$PY" bench/gpu_check.py "$@"
}

smoke_check() {
  local missing=()
  mapfile -t missing < <(missing_packages)
  if [[ ${#missing[@]} -eq 0 ]]; then
    echo "gpu_check --smoke: every package the check needs is installed; nothing would be installed"
  else
    echo "gpu_check --smoke: a GPU host would install from $WHEELS (not done here): ${missing[*]}"
    [[ -d "$WHEELS" ]] || echo "gpu_check --smoke: $WHEELS does not exist here (bash bench/gpu_check.sh prepare)"
  fi
  export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
  export MLFLOW_DISABLE_TELEMETRY=true DO_NOT_TRACK=1 PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
  cd "$ROOT"
  timeout --kill-after=20 "$LIMIT" "$PY" bench/gpu_check.py --smoke "$@"
}

case "${1:-run}" in
  prepare) shift; prepare "$@" ;;
  --smoke) shift; smoke_check "$@" ;;
  run) [[ $# -gt 0 ]] && shift; run_check "$@" ;;
  *) run_check "$@" ;;
esac
