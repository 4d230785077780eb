"""What a stage's Prefect flow run shows: its MLflow metrics per language, the recipe's summary (hand-written values)."""

from __future__ import annotations

import pytest

from components.reports.run_tables import language_table, recipe_summary, registered_text, split_key
from runtime.flow_runs.prefect_artifacts import artifact_key, mlflow_ui_url, publish_link, publish_stage_run, publish_table
from runtime.project import Project
from runtime.tracking import RunRef


def test_an_evaluation_run_becomes_one_row_per_metric_with_a_column_per_language():
    metrics = {
        "evaluation/mgsm/fr/accuracy": 0.5, "evaluation/mgsm/fr/accuracy_stderr": 0.25, "evaluation/mgsm/fr/accuracy_n": 4,
        "evaluation/mgsm/ja/accuracy": 0.0, "evaluation/mgsm/ja/accuracy_stderr": 0.0, "evaluation/mgsm/ja/accuracy_n": 4,
        "evaluation/mgsm/overall/accuracy": 0.25, "evaluation/mgsm/overall/accuracy_stderr": 0.1,
        "evaluation/mgsm/overall/accuracy_n": 8, "evaluation/mgsm/fr/n_rows": 4, "evaluation/mgsm/load_errors": 0,
    }
    rows = language_table({**metrics, "system/cpu_utilization_percentage": 40.0})  # the machine's: MLflow's
    assert rows == [  # the cells of several languages first, a count over the benchmark in `overall`: no `value`
        {"metric": "evaluation/mgsm/accuracy", "overall": "0.25 ±0.1 (n 8)", "fr": "0.5 ±0.25 (n 4)",
         "ja": "0 ±0 (n 4)"},
        {"metric": "evaluation/mgsm/load_errors", "overall": "0", "fr": "", "ja": ""},
        {"metric": "evaluation/mgsm/n_rows", "overall": "", "fr": "4", "ja": ""},
    ]
    assert list(rows[0]) == ["metric", "overall", "fr", "ja"]


def test_the_headline_group_comes_first_and_the_headline_metrics_lead():
    metrics = {"evaluation/mgsm/en/ttc": 2.0, "evaluation/mgsm/fr/lcpr": 1.0, "evaluation/mgsm/in_domain/lcpr": 1.0,
               "evaluation/mgsm/fr/accuracy": 0.0, "evaluation/mgsm/overall/ttc": 2.0}
    rows = language_table(metrics)
    assert [row["metric"] for row in rows] == ["evaluation/mgsm/lcpr", "evaluation/mgsm/accuracy",
                                               "evaluation/mgsm/ttc"]
    assert list(rows[0]) == ["metric", "in_domain", "overall", "en", "fr"]


def test_a_recipe_run_folds_each_delta_interval_and_mark_into_its_cell():
    metrics = {"evaluation/sft/mgsm/fr/accuracy_delta": 0.25, "evaluation/sft/mgsm/fr/accuracy_delta_low": 0.125,
               "evaluation/sft/mgsm/fr/accuracy_delta_high": 0.5, "evaluation/sft/mgsm/fr/accuracy_delta_significant": 1.0,
               "evaluation/sft/mgsm/fr/accuracy_n_both": 6, "evaluation/sft/mgsm/fr/n_shared": 8}
    assert language_table(metrics) == [
        {"metric": "evaluation/sft/mgsm/accuracy_delta", "fr": "0.25 [0.125, 0.5]* (n_both 6)"},
        {"metric": "evaluation/sft/mgsm/n_shared", "fr": "8"},
    ]


@pytest.mark.parametrize("key, expected", [
    ("data/traces/rate/th", ("data/traces/rate", "th")),
    ("grpo/kl", ("grpo/kl", "value")),  # two letters, but no language lingua detects
    ("evaluation/mgsm/in_domain/lcpr", ("evaluation/mgsm/lcpr", "in_domain")),
    ("fr/loss", ("fr/loss", "value")),  # the first segment is the stage, never a language
])
def test_the_language_segment_is_found_wherever_the_key_puts_it(key, expected):
    assert split_key(key) == expected


def test_training_metrics_without_a_language_fill_the_value_column_the_loss_first():
    assert language_table({"sft/loss": 1.25, "sft/learning_rate": 2e-05}) == [
        {"metric": "sft/loss", "value": "1.25"}, {"metric": "sft/learning_rate", "value": "2e-05"}]


ROWS = [
    {"benchmark": "mgsm", "lang": "fr", "model": "base", "accuracy": 0.25, "accuracy_stderr": 0.125, "accuracy_n": 8,
     "lcpr": None, "lcpr_stderr": None, "lcpr_n": None},
    {"benchmark": "mgsm", "lang": "fr", "model": "grpo", "accuracy": 0.5, "accuracy_stderr": 0.25, "accuracy_n": 8,
     "lcpr": None, "lcpr_stderr": None, "lcpr_n": None, "accuracy_delta": 0.25, "accuracy_delta_low": 0.0,
     "accuracy_delta_high": 0.5, "accuracy_delta_significant": False, "accuracy_n_both": 8, "n_shared": 8},
]


def test_the_recipe_summary_shows_each_model_with_its_error_and_each_delta_with_its_paired_interval():
    text = recipe_summary("demo-recipe", "[abc](http://mlflow/#/experiments/1/runs/abc)", ROWS, "base",
                          {"uri": "models:/demo/2", "alias": "candidate", "reused": False, "merged": None})
    lines = text.splitlines()
    assert lines[:5] == ["# Recipe demo-recipe", "", "Registered: `models:/demo/2` (alias `candidate`)", "",
                         "MLflow run: [abc](http://mlflow/#/experiments/1/runs/abc)"]  # what a person looks for first
    assert "## Headline: every language, compared to base" in text  # no in-domain group, no overall: every row
    assert "| benchmark | lang | model | value [95% interval] (n) | Δ to base (n_both) |" in text
    # Wilson's intervals at n_eff = p(1-p)/se^2: 3 of 12 and 2 of 4 (scipy: [0.089, 0.532], [0.150, 0.850])
    assert "| mgsm | fr | base | 0.250 [0.089, 0.532] (n 8) | - |" in text
    assert "| mgsm | fr | grpo | 0.500 [0.150, 0.850] (n 8) | +0.250 [+0.000, +0.500] (n_both 8) |" in text
    assert "**lcpr**" not in text  # measured by no model: no table
    chained = recipe_summary("demo-recipe", "sqlite:///x (run abc)", ROWS, "previous", None)
    assert "compared to the model before each" in chained and "Δ = minus the model before it (grpo - base)" in chained


def test_the_summary_leads_with_the_in_domain_lcpr_then_accuracy():
    group = [{**row, "lang": "in_domain", "lcpr": value, "lcpr_stderr": 0.1, "lcpr_n": 8, "headline": "accuracy"}
             for row, value in zip(ROWS, (0.5, 0.75))]
    text = recipe_summary("demo-recipe", "x", ROWS + group, "base", None)
    headline, rest = text.split("## Every metric and language")
    assert "## Headline: in_domain, compared to base" in headline and "| mgsm | fr |" not in headline
    assert headline.index("**lcpr**") < headline.index("**accuracy**")
    assert "| mgsm | in_domain | grpo | 0.750" in headline and "| mgsm | fr | grpo | 0.500" in rest


def test_a_recipe_without_evaluations_or_registry_says_so():
    text = recipe_summary("demo-recipe", "sqlite:///x (run abc)", [], "base", None)
    assert "no models were evaluated" in text and registered_text(None) in text


def test_publishers_do_nothing_outside_a_flow_run(tmp_path):
    run = RunRef("sqlite:///nowhere.db", "abc", "1")
    assert publish_table("t", [{"a": "1"}], "d") is None and publish_link("l", "http://x", "x", "d") is None
    assert publish_stage_run(run, Project(str(tmp_path)), "demo-sft") is None  # nor reads MLflow


def test_the_link_goes_to_the_ui_of_the_server_polyreason_up_recorded_for_the_project_store(tmp_path):
    project = Project(str(tmp_path))
    local = RunRef(f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}", "abc", "7")
    assert mlflow_ui_url(local, project).startswith(f"{local.tracking_uri} (run abc;")
    project.stack_file.parent.mkdir()
    project.stack_file.write_text('{"mlflow_url": "http://127.0.0.1:5001", "prefect_url": "x", "pids": {}, "logs": {}}')
    view = "?workflowType=machine_learning"  # MLflow's model-training view
    assert mlflow_ui_url(local, project) == f"http://127.0.0.1:5001/#/experiments/7/runs/abc{view}"
    elsewhere = RunRef("sqlite:////elsewhere/mlflow.db", "abc", "7")  # a store the stack does not serve
    assert mlflow_ui_url(elsewhere, project).startswith("sqlite:////elsewhere/mlflow.db (run abc;")
    served = RunRef("http://tracking:5000/", "abc", "7")
    assert mlflow_ui_url(served, project) == f"http://tracking:5000/#/experiments/7/runs/abc{view}"


def test_artifact_keys_are_what_prefect_accepts():
    assert artifact_key("cpu-demo_evaluation-GRPO") == "cpu-demo-evaluation-grpo"


def test_the_nightly_summary_names_the_version_and_its_delta_to_the_previous_evaluation():
    from components.reports.run_tables import nightly_summary

    rows = [{**row, "model": model} for row, model in zip(ROWS, ("previous (nightly 2026-12-04)", "this run"))]
    text = nightly_summary("models:/demo/3", "2026-12-05", "[r2](http://m/r2)", "[m-1](http://m/m-1)",
                           {"label": "nightly 2026-12-04", "link": "[r1](http://m/r1)"}, rows)
    lines = text.splitlines()
    assert lines[0] == "# Nightly 2026-12-05: `models:/demo/3`"
    assert "Version evaluated: `models:/demo/3`, logged model [m-1](http://m/m-1)" in lines
    assert "MLflow run: [r2](http://m/r2)" in lines
    assert "Compared to its previous evaluation (nightly 2026-12-04: [r1](http://m/r1))." in lines
    assert "| benchmark | lang | model | value [95% interval] (n) | Δ to previous (nightly 2026-12-04) (n_both) |" \
        in lines
    assert "| mgsm | fr | this run | 0.500 [0.150, 0.850] (n 8) | +0.250 [+0.000, +0.500] (n_both 8) |" in lines
    alone = nightly_summary("models:/demo/1", "2026-12-05", "x", "`m-1`", None, rows[1:])
    assert "No earlier evaluation of this version: nothing to compare with." in alone
