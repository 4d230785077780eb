"""A run held against its paper's table: which run measures which row, the numbers, the missing rows, the text."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.config import flatten, load_profile
from components.paper_comparison import (
    Measurement, format_paper_table, has_overrides, paper_entries, setting_value,
)  # fmt: skip
from components.paper_tables import PaperRow, load_table, resolve_table

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
    assert full["paper_in_ci"] is False and full["ci_high"] == pytest.approx(0.25 + 1.959964 * 0.05)
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
    (["grpo.coupling.baseline=batch"], {"Replace by PPO"}),
])
def test_each_ablation_run_measures_its_own_rows(overrides, measured_rows):
    metrics = {f"evaluation/{b}/all/{m}": 0.1 for b in ("mkqa", "xor_tydi") for m in ("fem", "c3recall", "clr")}
    entries = entries_of([lcrl_run(*overrides, metrics=metrics)])
    assert {e["row"] for e in entries if e["status"] == "measured"} == measured_rows


def test_no_run_of_the_role():
    entries = entries_of([Measurement("base", "base", "r", recipe_params("cpu-lcrl"), {})])
    assert {e["reason"] for e in entries} == {"no grpo evaluation among the compared runs"}


def test_an_evaluation_twin_against_adamames_table():
    params = logged(flatten(load_profile(PROFILES / "cpu-adamame-evaluation.yaml").evaluation, "evaluation."))
    metrics = {"evaluation/mgsm_rev2/all/lcpr": 0.4, "evaluation/mgsm_rev2/all/lcpr_stderr": 0.3,
               "evaluation/mgsm_rev2/all/lcpr_n": 6, "evaluation/mgsm_rev2/all/pass_at_2": 0.5}
    entries = entries_of([Measurement("evaluation", "base", "r", params, metrics)], "qwen3-4b-adamame-evaluation")
    by = {(e["table"], e["row"], e["benchmark"], e["metric"], e["language"]): e for e in entries}
    prompt = by[("Table 2", "Prompt", "mgsm_rev2", "lcpr", "all")]
    assert (prompt["status"], prompt["ci_low"], prompt["paper_in_ci"]) == ("measured", 0.0, True)  # clipped at 0
    assert by[("Table 2", "Vanilla", "mgsm_rev2", "lcpr", "all")]["reason"].startswith("another setting")
    assert by[("Table 2", "Prompt", "mgsm_rev2", "pass_at_4", "all")]["reason"].startswith("not logged")
    assert by[("Table 16", "Prompt", "mgsm_rev2", "pass_at_4", "fr")]["status"] == "missing"


def test_the_text_table_is_on_the_papers_scale():
    row = PaperRow("Main results", "LcRL", "Qwen2.5-3B", "grpo", "mkqa", "fem", "all", 41.2, 100.0)
    run = Measurement("grpo", "grpo", "r", {}, {row.key: 0.25, row.key + "_stderr": 0.05, row.key + "_n": 24})
    text = format_paper_table(paper_entries([row], [run]), "LcRL")
    line = text.splitlines()[-1]
    assert line.split()[:7] == ["Main", "results", "LcRL", "grpo", "mkqa", "all", "fem"]
    assert line.endswith("41.2    25.0 ±5.0 (n 24)  [15.2, 34.8]  Δ -16.2  !")
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
    from components.paper_tables import find_table

    assert find_table("qwen2.5-3b-lcrl-mkqa", tmp_path) == PROFILES / "papers" / "qwen2.5-3b-lcrl-mkqa.yaml"
    assert find_table("cpu-lcrl", tmp_path) is None  # a twin's recipe has no paper section of its own
    own = tmp_path / "profiles" / "papers" / "cpu-lcrl.yaml"
    own.parent.mkdir(parents=True)
    own.write_text("rows: []\nscale: 100\n", encoding="utf-8")
    assert find_table("cpu-lcrl", tmp_path) == own  # the project's tables come first
