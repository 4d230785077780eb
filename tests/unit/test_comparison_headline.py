"""The recipe's result on stdout: the comparison's headline (its group, its two metrics, each model and each delta
with its interval), where the full table is, and every line within 100 columns."""

from __future__ import annotations

from cli.terminal import recipe_text, where_lines
from components.reports.comparison import format_table, value_text
from components.reports.comparison_headline import headline_groups, headline_lines, headline_metrics

MODELS = ("base", "sft", "grpo")
# the LCPR of the demo's measured in-domain row (value, stderr, n; delta, low, high) as the README reports it
# (n: the 16 problems, a problem's three translations one unit; n_both: problems judged for both models)
LCPR = {"base": (0.787, 0.046, 16, None), "sft": (0.056, 0.046, 11, (-0.731, -0.848, -0.585, 11)),
        "grpo": (0.943, 0.029, 16, (0.888, 0.784, 0.978, 11))}


def demo_rows() -> list[dict]:
    """Rows shaped like the demo's comparison: four metrics, four languages and two groups, three models."""
    rows = []
    for lang in ("en", "fr", "ja", "th", "in_domain", "all"):
        for index, model in enumerate(MODELS):
            row = {"benchmark": "mgsm", "lang": lang, "model": model, "headline": "accuracy"}
            for metric in ("accuracy", "lcpr", "slc_and_acc", "ttc"):
                row.update({metric: 0.0, f"{metric}_stderr": 0.0, f"{metric}_n": 16})
                if index:
                    row.update({f"{metric}_delta": 0.0, f"{metric}_delta_low": 0.0, f"{metric}_delta_high": 0.0,
                                f"{metric}_n_both": 16})
            if index:
                row.update(reference=MODELS[index - 1], n_shared=48 if lang == "in_domain" else 16)
            if lang == "in_domain":
                value, stderr, n, delta = LCPR[model]
                row.update(lcpr=value, lcpr_stderr=stderr, lcpr_n=n)
                if delta:
                    row.update(lcpr_delta=delta[0], lcpr_delta_low=delta[1], lcpr_delta_high=delta[2],
                               lcpr_n_both=delta[3], lcpr_delta_significant=True)
            rows.append(row)
    return rows


def demo_summary() -> dict:
    return {"run_id": "0123456789abcdef0123456789abcdef", "comparison": {"path": "x", "summary": {"rows": demo_rows()}},
            "comparison_table": format_table(demo_rows(), "previous"), "evaluations": [],
            "registered": {"uri": "models:/cpu-demo/1", "alias": "candidate"},
            "run_url": "sqlite:////home/me/polyreason/mlruns/mlflow.db (run 0123456789abcdef0123456789abcdef; "
                       "open with: mlflow ui --backend-store-uri sqlite:////home/me/polyreason/mlruns/mlflow.db)"}


def test_the_headline_is_the_in_domain_lcpr_and_accuracy_of_every_model_with_each_delta():
    rows = demo_rows()
    assert headline_groups(rows, "mgsm") == ["in_domain"] and headline_metrics(rows, "mgsm") == ["lcpr", "accuracy"]
    lines = headline_lines(rows, ["fr", "pt", "ja", "ko", "th"])
    assert lines[0] == "mgsm, in-domain (fr, ja, th):"  # the in-domain languages the benchmark evaluates
    assert [line.split()[:2] for line in lines[1:4]] == [["lcpr", "base"], ["sft", "0.056"], ["grpo", "0.943"]]
    in_domain = {row["model"]: row for row in rows if row["lang"] == "in_domain"}
    grpo, sft = (value_text(in_domain[model], "lcpr") for model in ("grpo", "sft"))  # the table's own cells
    assert lines[3].split() == ["grpo", *grpo.split(), "grpo", "-", "sft", "Δ", "+0.888", "[+0.784,", "+0.978]*",
                                "(n_both", "11)"]
    assert lines[2].endswith(f"sft   {sft}  sft - base  Δ -0.731 [-0.848, -0.585]* (n_both 11)")
    accuracy = value_text(in_domain["base"], "accuracy")
    assert lines[4].startswith(f"accuracy  base  {accuracy}") and len(lines) == 7


def test_the_recipe_result_fits_100_columns_and_says_where_the_full_table_is():
    summary = demo_summary()
    assert max(len(line) for line in summary["comparison_table"].splitlines()) > 100  # what it printed before
    text = recipe_text(summary, None, ["fr", "ja", "th"])
    assert max(len(line) for line in text.splitlines()) <= 100, text
    assert "polyreason compare 0123456789abcdef0123456789abcdef" in text and "--json" in text
    assert "comparison/comparison.txt" in text and "registered: models:/cpu-demo/1 (alias candidate)" in text
    assert "grpo - sft  Δ +0.888 [+0.784, +0.978]* (n_both 11)" in text
    assert len(text.splitlines()) <= 20


def test_a_qa_comparison_leads_with_clr_and_fem():
    rows = [{"benchmark": "offline_qa", "lang": lang, "model": model, "headline": "fem", "fem": 0.5, "clr": 0.25,
             "c3recall": 0.1} for lang in ("en", "fr", "all") for model in ("base", "grpo")]
    assert headline_groups(rows, "offline_qa") == ["all"] and headline_metrics(rows, "offline_qa") == ["clr", "fem"]
    assert headline_lines(rows)[0] == "offline_qa, all languages:"
    without_groups = [row for row in rows if row["lang"] != "all"]  # then each language is shown
    assert [line for line in headline_lines(without_groups) if line.endswith(":")] == ["offline_qa, en:", "offline_qa, fr:"]
    unmeasured = [{**row, "clr": None} for row in rows if row["lang"] == "all"]
    assert headline_lines(unmeasured)[1].split() == ["clr", "base", "-"]


def test_a_run_in_a_local_store_takes_two_lines_without_repeating_the_path_on_one():
    lines = where_lines(demo_summary()["run_url"], None)
    assert lines == ["MLflow run: 0123456789abcdef0123456789abcdef in sqlite:////home/me/polyreason/mlruns/mlflow.db",
                     "  open with: mlflow ui --backend-store-uri sqlite:////home/me/polyreason/mlruns/mlflow.db"]
    assert where_lines("http://127.0.0.1:5000/#/experiments/1/runs/abc", None) == [
        "MLflow run: http://127.0.0.1:5000/#/experiments/1/runs/abc"]
