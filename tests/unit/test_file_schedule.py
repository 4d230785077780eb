"""The test files' order for xdist: longest expected file first, items of one file kept together and in order."""

from __future__ import annotations

from types import SimpleNamespace

from tests.helpers.file_schedule import expected_seconds, order_by_expected_seconds, seconds_per_file


def items(*nodeids: str) -> list[SimpleNamespace]:
    return [SimpleNamespace(nodeid=nodeid) for nodeid in nodeids]


def test_files_go_longest_first_and_keep_their_items_in_order():
    table = {"tests/e2e/test_b.py": 300.0, "tests/unit/test_a.py": 1.0, "tests/integration/test_c.py": 400.0}
    collected = items("tests/e2e/test_b.py::one", "tests/unit/test_a.py::x", "tests/e2e/test_b.py::two",
                      "tests/integration/test_c.py::only", "tests/unit/test_new.py::y")
    order_by_expected_seconds(collected, table)
    assert [item.nodeid for item in collected] == [
        "tests/integration/test_c.py::only", "tests/e2e/test_b.py::one", "tests/e2e/test_b.py::two",
        "tests/unit/test_new.py::y", "tests/unit/test_a.py::x"]  # unlisted unit file: 2 s, above the listed 1 s


def test_unlisted_files_take_their_kinds_default():
    assert expected_seconds("tests/e2e/test_new.py", {}) == 120.0
    assert expected_seconds("tests/integration/test_new.py", {}) == 30.0
    assert expected_seconds("components/metrics/bootstrap.py", {}) == 2.0


def test_durations_output_sums_setup_call_and_teardown_per_file():
    lines = ["============ slowest durations ============",
             "383.01s setup    tests/integration/test_k.py::test_one",
             "12.50s call     tests/integration/test_k.py::test_one",
             "0.25s teardown tests/integration/test_k.py::test_two[a-b]",
             "3.00s call     components/metrics/bootstrap.py::components.metrics.bootstrap",
             "(12 durations < 0.005s hidden.)"]
    assert seconds_per_file(lines) == {"tests/integration/test_k.py": 395.8, "components/metrics/bootstrap.py": 3.0}
