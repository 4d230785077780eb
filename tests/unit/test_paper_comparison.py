"""A run held against its paper's table: which run measures which row, the numbers, the missing rows, the text."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.config import flatten, load_profile
from components.reports.paper_comparison import (
    Measurement, format_paper_table, has_overrides, paper_entries, setting_value,
)  # fmt: skip
from components.reports.paper_tables import PaperRow, load_table, resolve_table

REPO = Path(__file__).resolve().parents[2]
PROFILES = REPO / "profiles"


def logged(params: dict) -> dict[str, str]:
    """Parameters as MLflow keeps them (text; None as an empty string)."""
    return {key: "" if value is None else str(value) for key, value in params.items()}


def recipe_params(name: str, *overrides: str) -> dict[str, str]:
    return logged(flatten(load_profile(PROFILES / f"{name}.yaml", list(overrides))))


@pytest.mark.parametrize("overrides, expected", [
    ([], True),
    (["grpo.rewards.0.params.penalty_weight=0.02"], True),        # inside a list parameter, numbers by value
    (["grpo.rewards.0.params.penalty_weight=0"], False),
    (["grpo.coupling={mode: language}"], True),                    # a mapping: the keys it names
    (["grpo.coupling={mode: none}"], False),
    (["grpo.lcrl.rounds=[[query], [others], [en]]"], True),        # a list: item by item
    (["grpo.lcrl.rounds=[[query]]"], False),
    (["grpo.no_such_key=1"], False),
    (["grpo.coupling.baseline=group", "grpo.beta=0.0"], True),
])
def test_a_run_has_the_settings_of_an_override(overrides, expected):
    assert has_overrides(recipe_params("cpu-lcrl"), overrides) is expected


def test_setting_values_come_back_typed():
    params = recipe_params("cpu-lcrl")
    assert setting_value(params, ["grpo", "lcrl", "rounds"]) == [["query"], ["others"], ["en"]]
    assert setting_value(params, ["grpo", "rewards", "0", "name"]) == "lcrl"
    assert setting_value(params, ["grpo", "coupling"])["languages"] == ["en", "fr", "ja"]


def lcrl_run(*overrides: str, metrics: dict | None = None) -> Measurement:
    return Measurement("grpo", "grpo", "run-grpo", recipe_params("cpu-lcrl", *overrides), metrics or {})


def entries_of(runs, table="qwen2.5-3b-lcrl-mkqa"):
    return paper_entries(load_table(PROFILES / "papers" / f"{table}.yaml"), runs)


def test_a_cpu_twins_recipe_measures_the_shipped_rows_and_lists_the_rest():
    metrics = {"evaluation/mkqa/all/fem": 0.25, "evaluation/mkqa/all/fem_stderr": 0.05, "evaluation/mkqa/all/fem_n": 24,
               "evaluation/offline_qa/all/fem": 0.5}
    entries = entries_of([lcrl_run(metrics=metrics)])
    assert len(entries) == 17  # every row of the table, none dropped
    by = {(e["table"], e["row"], e["benchmark"], e["metric"]): e for e in entries}
    full = by[("Main results", "LcRL", "mkqa", "fem")]
    assert (full["status"], full["measured"], full["n"], full["difference"]) == ("measured", 0.25, 24, -0.162)
    # the table gives no n for MKQA: the paper's error is left out, the difference's interval is the measured one's
    assert full["paper_n"] is None and full["consistent_with_paper"] is False
    assert (full["difference_low"], full["difference_high"]) == pytest.approx(
        (full["ci_low"] - 0.412, full["ci_high"] - 0.412), abs=1e-9)
    assert by[("Main results", "LcRL", "mkqa", "c3recall")]["reason"] == (
        "not logged: the run reports no c3recall there (evaluation/mkqa/all/c3recall)")
    assert by[("Main results", "LcRL", "xor_tydi", "fem")]["reason"] == "not evaluated: the run has no benchmark xor_tydi"
    ablation = by[("Ablations", "w/o Lc Reward", "mkqa", "fem")]
    assert ablation["reason"] == "another setting: this row is measured with grpo.rewards.0.params.penalty_weight=0"


@pytest.mark.parametrize("overrides, measured_rows", [
    ([], {"LcRL", "Full LcRL"}),
    (["grpo.rewards.0.params.penalty_weight=0"], {"w/o Lc Reward"}),
    (["grpo.rewards.0.params.answer_metric=exact_match"], {"w/o c3Recall Reward"}),
    (["grpo.coupling={mode: none}"], {"w/o Lc Rollout"}),
    (["grpo.lcrl.rounds=[[query]]"], {"w/o multi-language Rollout"}),
])
def test_each_ablation_run_measures_its_own_rows(overrides, measured_rows):
    metrics = {f"evaluation/{b}/all/{m}": 0.1 for b in ("mkqa", "xor_tydi") for m in ("fem", "c3recall", "clr")}
    entries = entries_of([lcrl_run(*overrides, metrics=metrics)])
    assert {e["row"] for e in entries if e["status"] == "measured"} == measured_rows


def test_replace_by_ppo_is_listed_as_not_reproducible_and_never_measured():
    """No run measures the PPO rows (no critic, no PPO trainer in trl 1.x): listed with the reason, in the text too."""
    metrics = {f"evaluation/mkqa/all/{m}": 0.1 for m in ("fem", "c3recall")}
    runs = [lcrl_run(metrics=metrics), lcrl_run("grpo.coupling.baseline=batch", metrics=metrics)]
    ppo = [e for e in entries_of(runs) if e["row"] == "Replace by PPO"]
    assert [(e["metric"], e["status"], e["measured"]) for e in ppo] == [("fem", "unmeasured", None),
                                                                        ("c3recall", "unmeasured", None)]
    assert all(e["reason"].startswith("not reproducible: PPO needs a critic") for e in ppo)
    text = format_paper_table(ppo, "LcRL")
    assert text.count("not measured here: not reproducible: PPO needs a critic") == 2


def test_no_run_of_the_role():
    entries = entries_of([Measurement("base", "base", "r", recipe_params("cpu-lcrl"), {})])
    assert {e["reason"] for e in entries if e["status"] == "missing"} == {"no grpo evaluation among the compared runs"}


def test_an_evaluation_twin_against_adamames_table():
    params = logged(flatten(load_profile(PROFILES / "cpu-adamame-evaluation.yaml").evaluation, "evaluation."))
    metrics = {"evaluation/mgsm_rev2/all/lcpr": 0.4, "evaluation/mgsm_rev2/all/lcpr_stderr": 0.3,
               "evaluation/mgsm_rev2/all/lcpr_n": 6, "evaluation/mgsm_rev2/all/pass_at_2": 0.5}
    entries = entries_of([Measurement("evaluation", "base", "r", params, metrics)], "qwen3-4b-adamame-evaluation")
    by = {(e["table"], e["row"], e["benchmark"], e["metric"], e["language"]): e for e in entries}
    prompt = by[("Table 2", "Prompt", "mgsm_rev2", "lcpr", "all")]
    assert (prompt["status"], prompt["paper_n"], prompt["consistent_with_paper"]) == ("measured", 250, True)
    assert 0.0 <= prompt["ci_low"] < 0.4 < prompt["ci_high"] <= 1.0  # Wilson's interval stays inside [0, 1]
    assert by[("Table 2", "Vanilla", "mgsm_rev2", "lcpr", "all")]["reason"].startswith("another setting")
    assert by[("Table 2", "Prompt", "mgsm_rev2", "pass_at_4", "all")]["reason"].startswith("not logged")
    assert by[("Table 16", "Prompt", "mgsm_rev2", "pass_at_4", "fr")]["status"] == "missing"


def test_the_text_table_is_on_the_papers_scale():
    row = PaperRow("Main results", "LcRL", "Qwen2.5-3B", "grpo", "mkqa", "fem", "all", 41.2, 100.0)
    run = Measurement("grpo", "grpo", "r", {}, {row.key: 0.25, row.key + "_stderr": 0.05, row.key + "_n": 24})
    text = format_paper_table(paper_entries([row], [run]), "LcRL")
    line = text.splitlines()[-1]
    assert line.split()[:7] == ["Main", "results", "LcRL", "grpo", "mkqa", "all", "fem"]
    # Wilson's at n_eff = 0.25 * 0.75 / 0.05^2 = 75, by hand: [0.1658, 0.3585]; no paper n: its error left out (~)
    assert line.endswith("41.2          25.0 ±5.0 (n 24)  [16.6, 35.9]  Δ -16.2 [-24.6, -5.3]  !  ~")
    assert "1 of 1 values measured" in text


@pytest.mark.parametrize("spec", ["profiles/qwen2.5-3b-lcrl-mkqa.yaml", "profiles/papers/qwen2.5-3b-lcrl-mkqa.yaml",
                                  "qwen2.5-3b-lcrl-mkqa"])
def test_a_paper_table_is_named_by_profile_file_or_name(spec):
    spec = str(REPO / spec) if spec.endswith(".yaml") else spec
    assert resolve_table(spec, REPO).resolve() == (PROFILES / "papers" / "qwen2.5-3b-lcrl-mkqa.yaml").resolve()


@pytest.mark.parametrize("spec, message", [("profiles/cpu-lcrl.yaml", "the cpu-\\* twins have none"),
                                           ("no-such-paper", "no paper table named so")])
def test_a_profile_without_a_table_is_refused(spec, message):
    with pytest.raises(ValueError, match=message):
        resolve_table(str(REPO / spec) if spec.endswith(".yaml") else spec, REPO)


def test_a_recipe_finds_its_profiles_table_by_name(tmp_path):
    from components.reports.paper_tables import find_table

    assert find_table("qwen2.5-3b-lcrl-mkqa", tmp_path) == PROFILES / "papers" / "qwen2.5-3b-lcrl-mkqa.yaml"
    assert find_table("cpu-lcrl", tmp_path) is None  # a twin's recipe has no paper section of its own
    own = tmp_path / "profiles" / "papers" / "cpu-lcrl.yaml"
    own.parent.mkdir(parents=True)
    own.write_text("rows: []\nscale: 100\n", encoding="utf-8")
    assert find_table("cpu-lcrl", tmp_path) == own  # the project's tables come first


def reproduction(measured: float, stderr: float, n: int, paper: float, paper_n: int | None) -> dict:
    row = PaperRow("T", "R", "M", "evaluation", "mgsm_rev2", "accuracy", "fr", paper * 100, 100.0, problems=paper_n)
    run = Measurement("evaluation", "e", "r", {}, {row.key: measured, row.key + "_stderr": stderr, row.key + "_n": n})
    return paper_entries([row], [run])[0]


def test_an_exact_reproduction_at_the_boundary_is_consistent():
    # 8 of 8 right in the paper and in the run: the old test (paper inside measured ± 1.96 * 0) said "inside" only
    # by the accident of equality; 7 of 8 against a printed 100% was "outside" although Wilson's [0.53, 0.98] and
    # the paper's own [0.68, 1] overlap widely
    assert reproduction(1.0, 0.0, 8, 1.0, 8)["consistent_with_paper"] is True
    near = reproduction(7 / 8, (7 / 8 * 1 / 8 / 8) ** 0.5, 8, 1.0, 8)
    assert near["consistent_with_paper"] is True and near["difference_low"] < 0 < near["difference_high"]


def simulated_consistency(true_rates, n: int, trials: int, samples: int = 1, seed: int = 0) -> tuple[float, float]:
    """Exact reproductions: the paper and the run each draw n problems of the benchmark's population and
    ``samples`` answers per problem; with one sample a problem is right with the true rate p, with several
    each problem has its own rate (Beta with mean p, so a problem's samples are correlated, as real ones are)
    and the value is avg@k. The run's standard error is the one its cluster bootstrap estimates, the standard
    deviation of the per-problem means over sqrt(n). Returns the share reported consistent, and the share the
    measured-only test (the paper inside measured ± 1.96 se) accepts."""
    import numpy as np

    rng = np.random.default_rng(seed)

    def run(p: float) -> tuple[float, float]:
        rates = np.full(n, p) if samples == 1 else rng.beta(2 * p / (1 - p), 2, n)   # mean p, concentration 2/(1-p)
        means = rng.binomial(samples, rates) / samples
        return float(means.mean()), float(means.std() / np.sqrt(n))

    consistent = inside = total = 0
    for p in true_rates:
        for _ in range(trials):
            (paper, _), (m, stderr) = run(p), run(p)
            consistent += reproduction(m, stderr, n, paper, n)["consistent_with_paper"]
            inside += abs(m - paper) <= 1.959964 * stderr
            total += 1
    return consistent / total, inside / total


@pytest.mark.parametrize("samples", [1, 4])
def test_exact_reproductions_at_the_papers_n_are_reported_consistent_95_percent_of_the_time(samples):
    # AdaMame's MGSM-Rev2: 250 problems per language, one sample or four (avg@4); rates up to near the boundary
    rate, measured_only = simulated_consistency((0.3, 0.6, 0.85, 0.97), n=250, trials=1000, samples=samples)
    assert 0.935 <= rate <= 0.975          # 4,000 reproductions: 0.95's binomial 99.9% band is about ±0.011
    assert measured_only < 0.88            # the test this replaces rejects about one exact reproduction in six


def test_a_corrected_cell_is_held_against_its_corrected_value_and_shows_the_printed_one():
    row = PaperRow("Table 2", "Vanilla", "Qwen3-4B", "base", "mgsm_rev2", "lcpr", "in_domain", 13.0, 100.0,
                   problems=250, corrected=1.3, evidence="mean of table 16's fr, ja, ko, th")
    run = Measurement("base", "base", "r", {}, {row.key: 0.02, row.key + "_stderr": 0.01, row.key + "_n": 1000})
    (entry,) = paper_entries([row], [run])
    # held against 1.3 %: 0.02 - 0.013 = +0.007 (against the printed 13.0 % it would be -0.11)
    assert (entry["paper"], entry["printed"], entry["paper_value"], entry["difference"]) == (1.3, 13.0, 0.013, 0.007)
    line = format_paper_table([entry], "AdaMame").splitlines()[-1]
    assert " 1.3 " in line and line.endswith("(printed 13.0: mean of table 16's fr, ja, ko, th)")


@pytest.mark.parametrize("measured, stderr, consistent", [
    (0.97, 0.01, True),     # interval [~0.95, ~0.99] reaches past 0.95
    (0.90, 0.01, False),    # Wilson's at n_eff = 0.9 * 0.1 / 0.01^2 = 900: upper end ~0.918 < 0.95
    (0.90, None, None),     # no error logged (an audit's figure): no verdict
])
def test_a_bound_is_consistent_when_the_measured_interval_reaches_past_it(measured, stderr, consistent):
    row = PaperRow("Abstract", "Qwen3-8B selection", "Qwen3-8B", "audit", "mgsm", "repairs_cross_lingual_share",
                   "all", 95.0, 100.0, verifier="trusted", relation=">",
                   key_template="audit/selection/mean/repairs_cross_lingual_share")
    metrics = {row.key: measured, **({row.key + "_stderr": stderr, row.key + "_n": 900} if stderr else {})}
    (entry,) = paper_entries([row], [Measurement("audit", "audit", "r", {}, metrics)])
    assert entry["key"] == "audit/selection/mean/repairs_cross_lingual_share"
    assert entry["consistent_with_paper"] is consistent
    assert " >95.0 " in format_paper_table([entry], "bias").splitlines()[-1]


def test_a_before_after_row_and_an_unmeasured_one_print_as_such():
    row = PaperRow("Abstract", "Training audit", "?", "-", "-", "trusted accuracy", "all", 0.735, 1.0, before=0.647,
                   unmeasured="not a run of this profile")
    (entry,) = paper_entries([row], [])
    assert (entry["status"], entry["before"], entry["key"]) == ("unmeasured", 0.647, None)
    line = format_paper_table([entry], "bias").splitlines()[-1]
    assert "0.647→0.735" in line and line.endswith("not measured here: not a run of this profile")


def test_pcs_baselines_are_measured_by_the_run_with_a_language_consistent_sft():
    """Table 2's SFT, Naive-RL and RLC-RL rows start from an SFT on language-consistent traces; PCS's own row from
    the shipped recipe (its code-switching cold start). A run measures exactly the rows of its setting."""
    table = load_table(PROFILES / "papers" / "qwen3-8b-pcs-grpo.yaml")
    consistent = ["data.traces.language_filter=lcpr", "data.traces.min_slc=null"]
    naive = [*consistent, "grpo.rewards=[{name: accuracy, params: {verifier: trusted, extraction: strict}}]"]
    shipped, baseline = recipe_params("qwen3-8b-pcs-grpo"), recipe_params("qwen3-8b-pcs-grpo", *naive)
    key = "evaluation/mmath/fr/slc_and_acc"
    runs = [Measurement(role, role, f"{name}-{role}", params, {key: 0.2})
            for name, params in (("shipped", shipped), ("naive", baseline)) for role in ("sft", "grpo")]
    measured = {(e["row"], e["run_id"]) for e in paper_entries(table, runs)
                if e["status"] == "measured" and e["language"] == "fr" and e["metric"] == "slc_and_acc"
                and e["benchmark"] == "mmath"}
    assert measured == {("SFT", "naive-sft"), ("Naive-RL", "naive-grpo"), ("PCS", "shipped-grpo")}
