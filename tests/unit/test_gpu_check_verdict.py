"""The GPU check fails on what it did not verify: a disagreement, a failed test, a skipped test, no GPU.

The per-test input is pytest's own JUnit XML, written by a real pytest run of a small test file
(one test passes, one skips itself, one fails), not a hand-written imitation of the format.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.append(str(Path(__file__).resolve().parents[2] / "bench"))
from gpu_verdict import FAILED, RUN, SKIPPED, PathOutcome, exit_code, junit_outcomes, part_outcome, table  # noqa: E402

TESTS = '''
import pytest

def test_passes():
    assert 1 + 1 == 2

def test_skips_itself():
    pytest.skip("server-mode GRPO needs two GPUs")

def test_fails():
    assert "cuda" == "cpu"
'''


@pytest.fixture(scope="module")
def junit(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("junit")
    (folder / "test_sample.py").write_text(TESTS, encoding="utf-8")
    report = folder / "report.xml"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                           f"--junitxml={report}", "test_sample.py"], cwd=folder, capture_output=True, text=True)
    assert done.returncode == 1, done.stdout  # pytest: some test failed
    return report


def test_junit_outcomes_read_pass_skip_and_failure_from_pytests_report(junit):
    outcomes = {o.path.rsplit("::", 1)[1]: o for o in junit_outcomes(junit, "cuda")}
    assert outcomes["test_passes"].status == RUN
    assert outcomes["test_skips_itself"].status == SKIPPED
    assert "needs two GPUs" in outcomes["test_skips_itself"].why
    assert outcomes["test_fails"].status == FAILED


def test_a_skipped_test_is_not_verified(junit):
    passed_and_skipped = [o for o in junit_outcomes(junit, "cuda") if o.status != FAILED]
    assert exit_code(passed_and_skipped) == 2
    assert exit_code([o for o in passed_and_skipped if o.status == RUN]) == 0
    assert exit_code(junit_outcomes(junit, "cuda")) == 1


def test_a_test_that_passed_on_the_cpu_is_not_a_gpu_run(junit):
    passed = [o for o in junit_outcomes(junit, "cpu") if o.path.endswith("test_passes")]
    assert [o.status for o in passed] == [SKIPPED] and exit_code(passed) == 2


def test_a_disagreement_fails_the_check():
    rows = [part_outcome("sft", {"loss": 1.2}, "cuda"), part_outcome("agreement", {"same_greedy_as_cpu": False}, "cuda")]
    assert [r.status for r in rows] == [RUN, FAILED]
    assert exit_code(rows) == 1
    assert exit_code(rows, smoke=True) == 1  # a smoke run fails on a disagreement too
    assert "failed" in table(rows).splitlines()[-1] and "NOT verified" in table(rows)


def test_parts_that_did_not_run_on_a_gpu_are_named_with_their_reason():
    rows = [part_outcome("generation", {"skipped": "no CUDA device visible"}, "cuda"),
            part_outcome("grpo", {"tokens": 3}, "cpu"),
            part_outcome("vllm_paths", {"error": "RuntimeError: pytest exited 4"}, "cuda")]
    assert [(r.status, r.why) for r in rows] == [(SKIPPED, "no CUDA device visible"), (SKIPPED, "ran on cpu, not on a GPU"),
                                                 (FAILED, "RuntimeError: pytest exited 4")]
    assert exit_code(rows[:2]) == 2 and exit_code(rows[:2], smoke=True) == 0
    assert exit_code([]) == 1  # nothing checked is not a pass
    printed = table(rows)
    (generation,) = [line for line in printed.splitlines() if line.startswith("generation")]
    assert generation.split(None, 2) == ["generation", "skipped", "no CUDA device visible"]
    assert printed.splitlines()[-1] == "0 run, 2 skipped, 1 failed: NOT verified"


def test_every_path_verified_reads_so():
    rows = [PathOutcome("sft", RUN), PathOutcome("two_gpu: server", RUN)]
    assert exit_code(rows) == 0 and table(rows).splitlines()[-1] == "2 run, 0 skipped, 0 failed: every path verified on the GPU"
