"""τ schedule (PCS eq. 4), φ(t)/α(t) (AdaMame eqs. 3-4) and curriculum checkpointing through the callback."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest

from components.rewards.curriculum import TauCurriculum, adamame_alpha, cosine_phi
from components.training.callbacks import CURRICULUM_FILE, CurriculumCallback

T = 1000


@pytest.mark.parametrize(
    ("step", "phi", "alpha_match"),
    [
        (0, 0.1, 1.2),  # floor: (1 - cos 0) / 2 = 0
        (T // 5, 0.1, 1.2),  # (1 - cos(pi/5)) / 2 = 0.0955 < 0.1 -> floor
        (T // 2, 0.5, 2.0),  # (1 - cos(pi/2)) / 2 = 0.5
        (T, 1.0, 3.0),  # (1 - cos(pi)) / 2 = 1
    ],
)
def test_phi_and_alpha_at_hand_computed_points(step, phi, alpha_match):
    assert cosine_phi(step, T) == pytest.approx(phi, abs=1e-12)
    assert adamame_alpha(True, cosine_phi(step, T), beta=2.0) == pytest.approx(alpha_match, abs=1e-12)
    assert adamame_alpha(False, cosine_phi(step, T), beta=2.0) == 1.0


def test_phi_between_floor_and_one():
    assert cosine_phi(300, T) == pytest.approx((1 - math.cos(math.pi * 0.3)) / 2)  # 0.2061
    assert cosine_phi(2 * T, T) == 1.0 and cosine_phi(-5, T) == 0.1


def test_tau_rises_only_at_or_above_threshold_and_only_at_window_ends():
    c = TauCurriculum(interval=40)
    c.record(passed=9, eligible=10)
    assert c.maybe_update(39) is None and c.tau == 0.1  # not a window end
    assert c.maybe_update(40) == 0.9 and c.tau == 0.2  # exactly 0.9 rises
    c.record(passed=89, eligible=100)
    assert c.maybe_update(80) == pytest.approx(0.89) and c.tau == 0.2  # below: stays
    assert c.maybe_update(120) is None and c.tau == 0.2  # empty window: undefined, stays
    assert [check["tau_after"] for check in c.checks] == [0.2, 0.2, 0.2]


def test_tau_counts_reset_after_each_check():
    c = TauCurriculum(interval=1)
    c.record(passed=1, eligible=10)
    c.maybe_update(1)
    c.record(passed=10, eligible=10)
    assert c.maybe_update(2) == 1.0 and c.tau == 0.2


def test_tau_never_above_max():
    c = TauCurriculum(interval=1)
    seen = []
    for step in range(1, 15):
        c.record(passed=5, eligible=5)
        c.maybe_update(step)
        seen.append(c.tau)
    assert seen[:9] == [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95]
    assert max(seen) == 0.95 and seen[-1] == 0.95


def test_window_counts_are_summed_across_processes():
    # two ranks: 1/10 here, 17/10 elsewhere -> 18/20 = 0.9 on every rank
    c = TauCurriculum(interval=1)
    c.record(passed=1, eligible=10)
    assert c.maybe_update(1, reduce=lambda v: [v[0] + 17, v[1] + 10]) == 0.9
    assert c.tau == 0.2


def test_record_rejects_impossible_counts():
    with pytest.raises(ValueError):
        TauCurriculum().record(passed=3, eligible=2)


def _state(step, world_zero=True):
    return SimpleNamespace(global_step=step, is_world_process_zero=world_zero)


def test_tau_survives_save_and_restore_through_the_callback(tmp_path):
    args = SimpleNamespace(output_dir=str(tmp_path))
    live = TauCurriculum(interval=2)
    callback = CurriculumCallback({"pcs": live})
    live.record(passed=10, eligible=10)
    callback.on_step_end(args, _state(2), None)  # window closes: 0.1 -> 0.2
    live.record(passed=3, eligible=4)  # open window at save time
    callback.on_save(args, _state(3), None)
    saved = json.loads((tmp_path / "checkpoint-3" / CURRICULUM_FILE).read_text())
    assert saved["curricula"]["pcs"]["tau"] == 0.2

    fresh = TauCurriculum(interval=2)
    resumed = CurriculumCallback({"pcs": fresh}, resume_from=tmp_path / "checkpoint-3")
    resumed.on_train_begin(args, _state(3), None)
    assert fresh.state_dict() == live.state_dict()
    assert (fresh.tau, fresh.passed, fresh.eligible, fresh.last_check) == (0.2, 3, 4, 2)
    assert resumed.metrics() == {"curriculum/tau": 0.2, "curriculum/pass_at_slc": 1.0}


def test_only_the_main_process_writes_and_a_missing_state_is_an_error(tmp_path):
    args = SimpleNamespace(output_dir=str(tmp_path))
    CurriculumCallback({"pcs": TauCurriculum()}).on_save(args, _state(5, world_zero=False), None)
    assert not (tmp_path / "checkpoint-5").exists()
    with pytest.raises(FileNotFoundError):
        CurriculumCallback({"pcs": TauCurriculum()}, resume_from=tmp_path).on_train_begin(args, _state(5), None)


def test_curriculum_file_roundtrip(tmp_path):
    c = TauCurriculum(tau=0.4, interval=7)
    c.save(tmp_path / "c.json")
    assert TauCurriculum.load(tmp_path / "c.json") == c


def test_batch_window_reads_the_last_batch_and_pooled_every_batch_since_the_check():
    # three batches before a check at step 3: 0/4, 0/4, then 4/4 in the last one
    outcomes = {}
    for window in ("pooled", "batch"):
        c = TauCurriculum(interval=3, window=window)
        for passed, eligible in ((0, 4), (0, 4), (4, 4)):
            c.record(passed=passed, eligible=eligible)
        outcomes[window] = (c.maybe_update(3), c.tau)
    assert outcomes == {"pooled": (4 / 12, 0.1), "batch": (1.0, 0.2)}  # the paper's rule rises here


def test_unknown_window_is_refused():
    with pytest.raises(ValueError, match="unknown window 'steps'"):
        TauCurriculum(window="steps")
