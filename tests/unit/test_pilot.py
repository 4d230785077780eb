"""The pilot's pure parts against hand computations: its overrides, the projected set, the slope's verdict and the
recomputed times (``components.planning.pilot``, ``components.planning.pilot_report``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.config import load_profile
from components.planning.pilot import Budget, PilotSizes, StageShare, shrinks, stage_shares
from components.planning.pilot_report import (
    PilotReport, Projection, RewardCurve, Retention, Slope, StageTime, level_of, slope_of,
)  # fmt: skip
from components.rewards.ranges import RewardRange

REPO = Path(__file__).resolve().parents[2]


def overrides_of(profile: str, sizes: PilotSizes = PilotSizes()) -> list[str]:
    return [cut.override for cut in shrinks(load_profile(REPO / "profiles" / f"{profile}.yaml", trl_checks=()), sizes)]


def test_the_overrides_cut_only_the_amount_of_work():
    # traces from a file: all filtered, the kept set capped at what fills one rejection call (32 rollouts of 1 over
    # 4 languages: 8, not the probe's 4); GRPO: 10% of 4 steps is 0.4, so the 3 a slope needs; evaluation on the
    # transformers backend: one full call of batch_size 32 over 4 languages, 8 problems each (not 2)
    assert overrides_of("cpu-demo") == ["data.traces.per_language=8", "sft.max_steps=4", "grpo.max_steps=3",
                                        "evaluation.benchmarks.0.limit=8"]
    assert overrides_of("cpu-demo", PilotSizes(probe=2)) == overrides_of("cpu-demo")  # a call is never cut short
    assert overrides_of("cpu-data-sft") == ["data.source.limit=4", "sft.max_steps=4"]  # generated: fewer queries
    # 3 GRPO steps: already within 5; its evaluation's 8 per language in 3 languages are one call of 24 already
    assert overrides_of("cpu-lcrl") == []
    assert overrides_of("cpu-lcrl", PilotSizes(evaluation_limit=4)) == []  # a full call is never cut short


def test_the_pilots_grpo_steps_are_a_share_of_the_profiles_and_at_least_three():
    from components.planning.pilot import grpo_share_note, pilot_grpo_steps

    sizes = PilotSizes()  # 5 steps asked, at most 10% of the profile's
    assert pilot_grpo_steps(800, sizes) == 5  # 10% of 800 = 80: the 5 asked
    assert pilot_grpo_steps(40, sizes) == 4  # 10% of 40 = 4
    assert pilot_grpo_steps(35, sizes) == 3  # 10% of 35 = 3.5, rounded down: 3
    assert pilot_grpo_steps(6, sizes) == 3  # 10% of 6 = 0.6: the minimum of 3
    assert pilot_grpo_steps(100, PilotSizes(grpo_steps=40, grpo_share=0.29)) == 29  # 0.29 x 100, not 28.999...
    assert pilot_grpo_steps(None, sizes) == 5  # epochs: no step count to take a share of
    assert grpo_share_note(30, sizes) is None and grpo_share_note(800, sizes) is None  # 3 steps = 10% of 30
    note = grpo_share_note(6, sizes)  # 3 of 6 = 50%
    assert note.startswith("grpo: 3 of the profile's 6 steps (50%), above the 10% share")
    assert grpo_share_note(3, sizes).startswith("grpo: 3 of the profile's 3 steps (100%)")  # cpu-lcrl: all of it
    with pytest.raises(ValueError, match="--grpo-share"):
        PilotSizes(grpo_share=0.0)


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


def test_a_generation_on_the_transformers_backend_is_shared_in_backend_calls():
    from components.planning.generation_plan import backend_batches

    # an evaluation of 3 models x 64 prompts in calls of 16 (cpu-demo's before its batches of 32) = 3 x 4 = 12
    # calls; the pilot's 3 x 8 prompts fill 3 x 1 calls: a quarter of the calls (not 24 / 192 = 1/8 of the completions)
    assert backend_batches(192, 16, passes=3) == 12 and backend_batches(24, 16, passes=3) == 3
    assert backend_batches(33, 16) == 3  # 16 + 16 + 1
    [share] = stage_shares({"evaluation": {"generation_batches": 3, "generation_completions": 24}},
                           {"evaluation": {"generation_batches": 12, "generation_completions": 192}})
    assert share.share == 0.25 and share.text() == "evaluation: 3 of 12 generation batches (25%)"
    # a measured cpu-demo pilot at batches of 16: 197.6 s of which 180.8 s backend: 16.8 + 4 x 180.8 = 740 s
    assert StageTime(share, wall_s=197.6, work_s=180.8).projected_s == pytest.approx(740.0)
    [vllm] = stage_shares({"evaluation": {"generation_completions": 24}}, {"evaluation": {"generation_completions": 192}})
    assert vllm.share == 0.125  # a server batches continuously: its completions are the work


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


def curve(name: str, values: list[float], low: float | None, high: float | None) -> RewardCurve:
    """A reward key over steps 1..n with the range [low, high] (``None``: unknown)."""
    return RewardCurve(slope_of(name, list(range(1, len(values) + 1)), values), level_of(values),
                       RewardRange(low, high))


def test_each_rewards_range_is_read_off_its_definition():
    from components.rewards.ranges import ranges_by_key, reward_range

    ends = lambda name, params=None: (reward_range(name, params).low, reward_range(name, params).high)  # noqa: E731
    assert ends("accuracy") == (0.0, 1.0) and ends("lcrl") == (0.0, 1.0)  # 1(answer = gold); max(0, recall + penalty)
    assert ends("softlc", {"bonus": 0.1}) == (0.0, 1.1)  # r_acc + 0.1 · match: 0, 0.1, 1 or 1.1
    assert ends("softlc", {"bonus": -0.2}) == (-0.2, 1.0)  # a penalty: 1 - 0.2 < 1
    assert ends("pcs") == (0.0, 1.1) and ends("pcs", {"slc_reward": "continuous"}) == (0.0, 1.1)  # 1 + 0.1 · SLC ≤ 1.1
    assert ends("mthinker") == (-1.0, 1.0)  # R_lc ∈ {−1, 0} + R_acc; no judge: no R_cta
    assert ends("mthinker", {"judge": {"model": "m"}}) == (-1.0, 2.0)  # + a judge's score ≤ 1
    assert ends("adamame")[1] is None and "φ(t)" in reward_range("adamame").note  # its ceiling moves with the step
    # trl's total is the weighted sum: 1 × [0, 1] + 0.5 × [0, 1.1] = [0, 1.55]; a negative weight swaps the ends
    total = ranges_by_key([("accuracy", 1.0, {}), ("softlc", 0.5, {})])["reward"]
    assert (total.low, total.high) == pytest.approx((0.0, 1.55))
    assert ranges_by_key([("accuracy", -2.0, {})])["reward"].text() == "[-2, 0]"
    assert set(ranges_by_key([("softlc", 1.0, {"bonus": 0.1})])) == {
        "reward", "rewards/softlc/mean", "reward/accuracy", "reward/language_bonus"}  # one function: its parts


def test_a_rewards_level_is_its_mean_with_a_t_interval():
    # 0.1 0.3 0.2: mean 0.2, s = 0.1, se = 0.1 / sqrt(3) = 0.0577350, t(0.975, 2) = 4.302653: half 0.2484138
    level = level_of([0.1, 0.3, 0.2])
    assert (level.first, level.mean, level.low, level.high) == pytest.approx((0.1, 0.2, -0.0484138, 0.4484138))
    assert level_of([0.1, 0.1, 0.1]).low == level_of([0.1, 0.1, 0.1]).high == pytest.approx(0.1)


def test_a_flat_reward_at_its_ceiling_is_saturated_not_refused():
    at_top = curve("reward", [1.1, 1.1, 1.1], 0.0, 1.1)
    report = PilotReport("p", [], curves=[at_top])
    assert report.problems == [] and report.verdict == "saturated"
    assert "starts at 1.1" in report_text(report) and "ceiling 1.1" in report_text(report)
    # 1.1 1.0 1.1 1.1 1.0: slope -0.1 / 10 = -0.01, flat; mean 1.06, s = sqrt(0.012 / 4) = 0.0547723,
    # se 0.0244949, t(0.975, 4) = 2.776445: [0.9920, 1.1280]; headroom 1.1 - 1.06 = 0.04, within 5% of 1.1 = 0.055
    noisy = curve("reward", [1.1, 1.0, 1.1, 1.1, 1.0], 0.0, 1.1)
    assert noisy.slope.flat and noisy.level.high == pytest.approx(1.1280087) and noisy.at_ceiling
    assert PilotReport("p", [], curves=[noisy]).verdict == "saturated"
    # 0.8 1.1 0.5: mean 0.8, its interval [0.055, 1.545] reaches 1.1, but the headroom 0.3 is more than 0.055
    wide = curve("reward", [0.8, 1.1, 0.5], 0.0, 1.1)
    assert wide.level.high > 1.1 and not wide.at_ceiling and PilotReport("p", [], curves=[wide]).verdict == "refused"


def test_a_reward_whose_parts_are_at_their_ceiling_or_floor_is_saturated():
    # SoftLC = accuracy + language bonus: the bonus at its ceiling 0.1, accuracy at its floor 0: the total
    # 0.1 is far below its ceiling 1.1, but no part has headroom GRPO's groups could use
    total = curve("reward", [0.1, 0.1, 0.1], 0.0, 1.1)
    accuracy, bonus = curve("reward/accuracy", [0.0, 0.0, 0.0], 0.0, 1.0), curve(
        "reward/language_bonus", [0.1, 0.1, 0.1], 0.0, 0.1)
    report = PilotReport("p", [], curves=[total, accuracy, bonus])
    assert report.problems == [] and report.verdict == "saturated"
    text = report_text(report)
    assert "reward/language_bonus is at its ceiling 0.1" in text and "reward/accuracy stays at its floor 0" in text
    # cpu-demo's pilot: the bonus 0.1, 0.1, 0.05: mean 0.0833 is 0.0167 below 0.1, more than 5% of 0.1 = 0.005,
    # but it starts at 0.1: no room to rise from the first step
    starts_at_top = curve("reward/language_bonus", [0.1, 0.1, 0.05], 0.0, 0.1)
    assert starts_at_top.at_ceiling and PilotReport("p", [], curves=[
        curve("reward", [0.1, 0.1, 0.05], 0.0, 1.1), accuracy, starts_at_top]).verdict == "saturated"
    # a second cpu-demo pilot: the bonus 0.0875, 0.0875, 0.1: it starts 0.0125 below the ceiling (more than 0.005)
    # and ends on it; the full run's bonus went 0.0375, 0.0625, 0.1, 0.1: a reward that reaches its ceiling has used
    # its room, as one that starts there has none
    ends_at_top = curve("reward/language_bonus", [0.0875, 0.0875, 0.1], 0.0, 0.1)
    reached = PilotReport("p", [], curves=[curve("reward", [0.0875, 0.0875, 0.1], 0.0, 1.1), accuracy,
                                           ends_at_top])
    assert ends_at_top.slope.flat and ends_at_top.at_ceiling and reached.verdict == "saturated"
    assert "reward/language_bonus is at its ceiling 0.1 (from 0.0875 to 0.1)" in report_text(reached)
    # the bonus at half its ceiling: room the settings did not use; refused naming the keys
    half = curve("reward/language_bonus", [0.05, 0.05, 0.05], 0.0, 0.1)
    [problem] = PilotReport("p", [], curves=[total, accuracy, half]).problems
    assert "below its ceiling 1.1" in problem and "reward/language_bonus" in problem


def test_a_flat_reward_below_its_ceiling_is_refused_naming_the_keys():
    # 0.1 0.3 0.2: slope 0.1 / 2 = 0.05, SSE 0.015, se sqrt(0.0075) = 0.0866, t(0.975, 1) = 12.706: [-1.05, 1.15],
    # flat; level [-0.048, 0.448], below 1
    flat = curve("reward", [0.1, 0.3, 0.2], 0.0, 1.0)
    report = PilotReport("p", [], curves=[flat, curve("rewards/accuracy/mean", [0.1, 0.3, 0.2], 0.0, 1.0)])
    [problem] = report.problems
    assert problem.startswith("grpo: the reward is flat within its noise: reward") and report.verdict == "refused"
    assert all(key in problem for key in ("below its ceiling 1", "reward, rewards/accuracy/mean",
                                          "grpo.learning_rate", "grpo.lora", "grpo.rewards"))
    unknown = RewardCurve(flat.slope, flat.level, RewardRange(0.0, None, "its ceiling moves"))
    [problem] = PilotReport("p", [], curves=[unknown]).problems
    assert "its ceiling is unknown (its ceiling moves)" in problem
    rising = curve("reward", [0.0, 0.1, 0.2, 0.31], 0.0, 1.0)  # slope interval [0.0955, 0.1105]
    assert PilotReport("p", [], curves=[rising]).problems == [] and PilotReport("p", [], curves=[rising]).verdict == "go"


def report_text(report: PilotReport) -> str:
    return " ".join(line.strip() for line in report.lines())


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


def test_a_steady_step_time_counts_the_first_steps_start_up_once():
    share = StageShare("sft", "optimizer steps", 2, 16)
    # 40 s here, of which the 14 steps not run take 4.5 s each once training runs: 40 + 14 x 4.5 = 103 s (scaling
    # a 14 s train_runtime 8-fold would give 26 + 112 = 138 s)
    timed = StageTime(share, wall_s=40.0, work_s=14.0, unit_s=4.5)
    assert timed.projected_s == pytest.approx(103.0) and "at its steady step time" in timed.text()
    assert StageTime(share, 40.0, 14.0).projected_s == pytest.approx(138.0)
    every = StageTime(StageShare("grpo", "optimizer steps", 3, 3), wall_s=330.0, work_s=300.0, unit_s=100.0)
    assert every.projected_s == 330.0 and "(run whole)" in every.text()  # nothing left to add
    # a cached stage's wall time measures no work: the steady time is not added to it
    assert StageTime(share, 2.0, 14.0, cached=True, unit_s=4.5).projected_s == pytest.approx(112.0)


def test_the_metrics_sink_stamps_each_step_with_the_seconds_since_training_began(tmp_path):
    import json
    from types import SimpleNamespace

    from components.training.callbacks import MetricsJsonlCallback

    ticks = iter([100.0, 106.5, 111.0, 111.2])  # train begins; step 1 logged; step 2 logged; the summary
    sink = MetricsJsonlCallback(tmp_path / "metrics.jsonl", clock=lambda: next(ticks))
    state = SimpleNamespace(is_world_process_zero=True, global_step=0)
    sink.on_train_begin(None, state, None)
    for step, logs in ((1, {"loss": 2.0}), (2, {"loss": 1.5}), (2, {"train_runtime": 11.2})):
        state.global_step = step
        sink.on_log(None, state, None, logs=logs)
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [row.get("time/elapsed_s") for row in rows] == [6.5, 11.0, None]  # the summary is not a step


def test_report_fits_the_terminal_and_its_metric_names_suit_mlflow():
    share = StageShare("grpo", "optimizer steps", 5, 800)
    report = PilotReport("qwen3-8b-pcs-grpo", ["pilot budget " + "x " * 80],
                         projections=[Projection("fr", Retention(3, 4), 12000, 6000, Retention(4, 4))],
                         curves=[RewardCurve(Slope("reward", 5, 0.1, 0.05, 0.15), level_of([0.2, 0.4]),
                                             RewardRange(0.0, 1.1))], times=[StageTime(share, 600, 500)],
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
    names = ["grpo/reward", "grpo/rewards/softlc/mean", "grpo/rewards/softlc/std", "grpo/rewards/acc/mean"]
    assert reward_keys(names, "grpo/reward") == ["grpo/reward", "grpo/rewards/acc/mean",
                                                       "grpo/rewards/softlc/mean"]
    # parts only where they were logged
    assert reward_keys(names + ["grpo/reward/accuracy"], "grpo/reward", ("reward/accuracy", "reward/x"))[-1] \
        == "grpo/reward/accuracy"
