"""The reward guard: thresholds, statuses and the RewardBiasError the GRPO stage relies on."""

from __future__ import annotations

import pytest

from components.audit.guard import RewardBiasError, check_reward_verifier, guard_status

# en: exact accepts both correct samples; ja: both correct samples carry 円, exact rejects them.
ROWS = [
    {"id": "p1", "lang": "en", "gold": "18", "completion": "So \\boxed{18}."},
    {"id": "p2", "lang": "en", "gold": "5", "completion": "The answer is 5."},
    {"id": "p1", "lang": "ja", "gold": "18", "completion": "答えは\\boxed{18円}"},
    {"id": "p2", "lang": "ja", "gold": "5", "completion": "答えは5個です。"},
    {"id": "p3", "lang": "ja", "gold": "7", "completion": "\\boxed{7}"},
    {"id": "p4", "lang": "ja", "gold": "9", "completion": "\\boxed{8}"},
    {"id": "p9", "lang": "??", "gold": "9", "completion": "\\boxed{9}"},
]
# exact vs trusted: en Err 0/2 = 0; ja Err 2/4 = 0.5 (FNR 2/3) -> VLB(err) = 0.5, VLB(fnr) = 2/3


@pytest.mark.parametrize(
    ("value", "status"), [(None, "ok"), (0.0, "ok"), (0.1, "ok"), (0.100001, "warn"), (0.3, "warn"), (0.31, "fail")]
)
def test_guard_status_thresholds(value, status):
    assert guard_status(value, warn_vlb=0.1, fail_vlb=0.3) == status


def test_thresholds_must_be_ordered():
    with pytest.raises(ValueError, match="must not exceed"):
        guard_status(0.2, warn_vlb=0.5, fail_vlb=0.3)


def test_exact_reward_fails_with_a_clear_error():
    with pytest.raises(RewardBiasError, match=r"'exact'.*VLB\(err\) = 0\.500.*fail_vlb = 0\.3"):
        check_reward_verifier(ROWS, "exact", warn_vlb=0.1, fail_vlb=0.3)


def test_statuses_and_per_language_rates():
    result = check_reward_verifier(ROWS, "exact", warn_vlb=0.1, fail_vlb=0.3, raise_on_fail=False)
    assert (result.status, result.vlb) == ("fail", pytest.approx(0.5))
    assert result.per_lang["ja"].fnr == pytest.approx(2 / 3)
    assert result.per_lang["en"].err == 0.0
    assert [e["row"] for e in result.errors] == [6]  # the unknown-language row is reported, not counted
    assert check_reward_verifier(ROWS, "exact", warn_vlb=0.4, fail_vlb=0.6).status == "warn"
    assert check_reward_verifier(ROWS, "exact", warn_vlb=0.5, fail_vlb=0.6).status == "ok"
    fnr = check_reward_verifier(ROWS, "exact", warn_vlb=0.5, fail_vlb=0.9, metric="fnr")
    assert (fnr.status, fnr.vlb) == ("warn", pytest.approx(2 / 3))


def test_trusted_reward_is_unbiased_by_definition():
    result = check_reward_verifier(ROWS, "trusted", warn_vlb=0.0, fail_vlb=0.0)
    assert (result.status, result.vlb) == ("ok", 0.0)


def test_unknown_metric():
    with pytest.raises(ValueError, match="unknown guard metric 'acc'"):
        check_reward_verifier(ROWS, "exact", warn_vlb=0.1, fail_vlb=0.3, metric="acc")
