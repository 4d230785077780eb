"""The pilot's pure parts against hand computations: its overrides, the projected set, the slope's verdict and the
recomputed times (``components.planning.pilot``, ``components.planning.pilot_report``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.config import load_profile
from components.planning.pilot import Budget, PilotSizes, StageShare, shrinks, stage_shares
from components.planning.pilot_report import PilotReport, Projection, Retention, Slope, StageTime, slope_of

REPO = Path(__file__).resolve().parents[2]


def overrides_of(profile: str, sizes: PilotSizes = PilotSizes()) -> list[str]:
    return [cut.override for cut in shrinks(load_profile(REPO / "profiles" / f"{profile}.yaml", trl_checks=()), sizes)]


def test_the_overrides_cut_only_the_amount_of_work():
    assert overrides_of("cpu-demo") == ["data.traces.per_language=4", "sft.max_steps=2", "grpo.max_steps=5",
                                        "evaluation.benchmarks.0.limit=2"]  # traces from a file: capped, all filtered
    assert overrides_of("cpu-data-sft") == ["data.source.limit=4", "sft.max_steps=2"]  # generated: fewer queries
    assert overrides_of("cpu-lcrl") == ["evaluation.benchmarks.0.limit=2"]  # 3 GRPO steps: already within 5


def test_sizes_too_small_to_measure_are_refused():
    with pytest.raises(ValueError, match="--grpo-steps"):
        PilotSizes(grpo_steps=2)
    with pytest.raises(ValueError, match="at least 1"):
        PilotSizes(probe=0)


def test_shares_and_the_gpu_bound():
    shares = stage_shares({"sft": {"optimizer_steps": 2}, "grpo": {"optimizer_steps": 5}},
                          {"sft": {"optimizer_steps": 16}, "grpo": {"optimizer_steps": 800}})
    assert [(s.stage, s.share) for s in shares] == [("sft", 2 / 16), ("grpo", 5 / 800)]
    assert shares[0].text() == "sft: 2 of 16 optimizer steps (12%)"
    budget = Budget(shares, [], pilot_gpu_hours=6.0, full_gpu_hours=250.0)  # bound: 2% of 250 = 5 GPU-hours
    assert budget.bound == pytest.approx(5.0) and budget.over_bound
    assert not Budget(shares, [], pilot_gpu_hours=4.9, full_gpu_hours=250.0).over_bound


def test_retention_interval_is_wilsons():
    # p = 0.5, n = 4, z = 1.959964: centre 0.5, half-width z/(1+z²/n)·sqrt(p(1-p)/n + z²/4n²)
    # = 0.999795 × sqrt(0.0625 + 0.060023) = 0.349961
    low, high = Retention(2, 4).interval
    assert (low, high) == pytest.approx((0.150039, 0.849961), abs=1e-5)
    assert Retention(0, 4).interval == pytest.approx((0.0, 0.489890), abs=1e-5)  # z²/(n+z²) at 0 kept


def test_projection_multiplies_both_filters_and_caps_at_the_target():
    # translation 4/4: Wilson [0.510104, 1]; traces 2/4: [0.150039, 0.849961]; 100 queries, target 100
    p = Projection("fr", Retention(2, 4), queries=100, target=100, translation=Retention(4, 4))
    assert p.size == 50 and p.interval == (7, 84)  # int(100 × 0.510 × 0.150) = 7, int(100 × 1 × 0.850) = 84
    assert Projection("fr", Retention(2, 4), queries=100, target=50).interval == (15, 50)  # capped at the target


def test_a_language_short_of_its_target_is_refused_naming_it_and_the_keys():
    short = Projection("ja", Retention(0, 4), queries=100, target=100)  # at most int(48.989) = 48 < 0.5 × 100
    kept = Projection("fr", Retention(2, 4), queries=100, target=100)
    assert short.short_of(0.5) and not kept.short_of(0.5)
    report = PilotReport("p", [], projections=[short, kept], min_share=0.5)
    [problem] = report.problems
    assert problem.startswith("data: ja: projected 0–48 traces of target 100") and "data.traces.per_language" in problem


def test_slope_and_its_interval_against_a_hand_fit():
    # x = 1..4, y = .1 .3 .2 .4: slope Sxy/Sxx = 0.4/5 = 0.08; SSE 0.018, se = sqrt(0.009/5) = 0.0424264;
    # t(0.975, 2) = 4.302653, half-width 0.182544
    s = slope_of("reward", [1, 2, 3, 4], [0.1, 0.3, 0.2, 0.4])
    assert (s.slope, s.low, s.high) == pytest.approx((0.08, -0.102544, 0.262544), abs=1e-5) and s.flat
    # y = 0 .1 .2 .31: slope 0.515/5 = 0.103, SSE 3e-5, se = sqrt(1.5e-5/5) = 0.00173205, half 0.0074525
    rising = slope_of("reward", [1, 2, 3, 4], [0.0, 0.1, 0.2, 0.31])
    assert (rising.low, rising.high) == pytest.approx((0.0955475, 0.1104525), abs=1e-6) and not rising.flat
    assert slope_of("reward", [1, 2], [0.0, 1.0]) is None  # two points: no interval
    assert slope_of("reward", [1, 2, 3], [0.2, 0.2, 0.2]).flat  # a constant reward moves nothing


def test_a_flat_reward_is_refused_naming_the_keys():
    report = PilotReport("p", [], slopes=[Slope("train/reward", 5, 0.01, -0.02, 0.04)])
    [problem] = report.problems
    assert all(key in problem for key in ("grpo.learning_rate", "grpo.lora", "grpo.rewards"))
    assert PilotReport("p", [], slopes=[Slope("train/reward", 5, 0.05, 0.01, 0.09)]).problems == []


def test_recomputed_time_scales_the_work_and_keeps_the_fixed_part():
    share = StageShare("sft", "optimizer steps", 2, 16)  # the pilot ran 1/8 of the steps
    assert StageTime(share, wall_s=30.0, work_s=20.0).projected_s == pytest.approx(10 + 20 * 8)
    assert StageTime(share, wall_s=30.0).projected_s == pytest.approx(240.0)  # no work time: scaled whole
    assert StageTime(share, wall_s=2.0, work_s=20.0, cached=True).projected_s == pytest.approx(160.0)  # the cache's
    assert StageTime(share, wall_s=2.0, cached=True).projected_s is None
    report = PilotReport("p", [], times=[StageTime(share, 30.0, 20.0), StageTime(share, 30.0)])
    assert report.projected_total_s == pytest.approx(410.0)
    assert report.metrics()["pilot/projected_seconds/total"] == pytest.approx(410.0)
    whole = StageShare("data", "units", None, None)  # traces read from a file: the pilot filters the whole file
    assert StageTime(whole, wall_s=12.0).projected_s == 12.0 and whole.text().startswith("data: the whole stage")
    unplanned = StageShare("data", "teacher traces", 8, None)  # a hub source the plan cannot count
    assert StageTime(unplanned, wall_s=12.0).projected_s is None


def test_report_fits_the_terminal_and_its_metric_names_suit_mlflow():
    share = StageShare("grpo", "optimizer steps", 5, 800)
    report = PilotReport("qwen3-8b-pcs-grpo", ["pilot budget " + "x " * 80],
                         projections=[Projection("fr", Retention(3, 4), 12000, 6000, Retention(4, 4))],
                         slopes=[Slope("rewards/pcs/mean", 5, 0.1, 0.05, 0.15)], times=[StageTime(share, 600, 500)],
                         training={"kl_mean": 0.01}, throughput={"grpo_tokens_per_s": 1234.5})
    assert max(map(len, report.lines())) <= 100
    assert not any(c in key for key in report.metrics() for c in "@&")
    assert report.lines()[-1] == "verdict: go"


def test_a_projection_reads_the_data_stages_logged_counts():
    from components.planning.pilot_report import projection_from_counts

    counts = {"data/translation/accepted/fr": 3, "data/translation/rejected/fr": 1,
              "data/traces/kept/fr": 2, "data/traces/total/fr": 3}
    projection = projection_from_counts("fr", counts, queries=1000, target=600, translated=True)
    assert (projection.translation, projection.traces) == (Retention(3, 4), Retention(2, 3))
    assert (projection.queries, projection.target) == (1000, 600)
    assert projection_from_counts("fr", counts, queries=1000, target=600, translated=False).translation is None
    # traces read from a file: the file's rows are the queries; a target above them is capped at them
    from_file = projection_from_counts("fr", counts, queries=None, target=8, translated=False)
    assert (from_file.queries, from_file.target) == (3, 3)
    assert projection_from_counts("ja", counts, queries=None, target=None, translated=False).traces == Retention(0, 0)


def test_grpo_throughput_by_hand():
    from components.planning.pilot_report import grpo_throughput, reward_keys

    # 5 steps in 100 s; 8 completions per step; mean lengths 30, 32, 28, 30, 30 tokens: 150 x 8 / 100 = 12 tokens/s
    assert grpo_throughput(5, 40, 100.0, [30, 32, 28, 30, 30]) == {"grpo_steps_per_s": 0.05, "grpo_tokens_per_s": 12.0}
    assert grpo_throughput(5, None, 100.0, [30]) == {"grpo_steps_per_s": 0.05}
    assert grpo_throughput(None, 40, 100.0, [30]) == {} and grpo_throughput(5, 40, None, [30]) == {}
    names = ["grpo/train/reward", "grpo/rewards/softlc/mean", "grpo/rewards/softlc/std", "grpo/rewards/acc/mean"]
    assert reward_keys(names, "grpo/train/reward") == ["grpo/train/reward", "grpo/rewards/acc/mean",
                                                       "grpo/rewards/softlc/mean"]
