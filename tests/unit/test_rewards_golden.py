"""Golden traces: the language rewards give the values pinned on 30 long, realistic traces.

The traces (500-16,000 characters, eleven languages, code-switching, loops, LaTeX,
truncated think blocks; built by ``tests.helpers.golden_traces``) and the values were
written once from the reward implementations before their batched/linear rewrite;
any change of verdict, SLC value or logged component shows up here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.golden_traces import reward_values

GOLDEN = Path(__file__).parent / "data" / "golden_reward_traces.json"


@pytest.fixture(scope="module")
def golden() -> dict:
    return json.loads(GOLDEN.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def actual(golden) -> dict:
    return reward_values(golden["traces"])


def test_golden_set_covers_long_traces_and_every_verdict(golden):
    lengths = [len(row["completion"]) for row in golden["traces"]]
    assert max(lengths) > 16_000 and min(lengths) < 1_000
    expected = golden["expected"]
    assert set(expected["rewards"]["pcs_tau_0.9"]) == {0.0, 0.1, 1.0, 1.1}
    assert True in expected["repetition"]["default"] and False in expected["repetition"]["default"]


@pytest.mark.parametrize("key", ["pcs_tau_0.1", "pcs_tau_0.9", "softlc_completion", "softlc_trace",
                                 "softlc_response", "adamame_half", "adamame_2000"])
def test_rewards_and_logged_components_unchanged(golden, actual, key):
    ids = [row["id"] for row in golden["traces"]]
    expected = dict(zip(ids, golden["expected"]["rewards"][key]))
    assert dict(zip(ids, actual["rewards"][key])) == pytest.approx(expected)
    assert actual["logged"][key] == pytest.approx(golden["expected"]["logged"][key])


def test_slc_values_unchanged(golden, actual):
    ids = [row["id"] for row in golden["traces"]]
    assert dict(zip(ids, actual["pcs_slc"])) == pytest.approx(dict(zip(ids, golden["expected"]["pcs_slc"])))


@pytest.mark.parametrize("variant", ["default", "p16_span8", "repeats5"])
def test_repetition_verdicts_unchanged(golden, actual, variant):
    ids = [row["id"] for row in golden["traces"]]
    assert dict(zip(ids, actual["repetition"][variant])) == dict(zip(ids, golden["expected"]["repetition"][variant]))
