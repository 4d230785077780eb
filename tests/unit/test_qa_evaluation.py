"""QA benchmarks in the evaluation: settings, LcRL's metrics per row and language, reports and comparisons."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.reports.comparison import comparison_columns, comparison_rows, format_table
from components.config import load_profile, load_profile_dict
from components.reports.benchmark import benchmark_report
from components.scoring import score_rows
from components.settings import ProfileError, ScoringSettings

REPO = Path(__file__).resolve().parents[2]
INFO = "\n\n<information>\n[fr] 1. Tokyo: Tokyo est la capitale du Japon.\n</information>\n\n"


def qa(id_, completion, gold="Tokyo", answers=("Tokyo",), lang="fr"):
    return {"id": id_, "lang": lang, "gold": gold, "answers": list(answers), "benchmark": "offline_qa",
            "completion": completion}


@pytest.mark.parametrize("completion, answers, expected", [
    # completion, accepted answers -> (extracted, em, fem, c3recall, searches)
    (f"<search> capitale </search>{INFO}<answer> Tokyo </answer>", ["Tokyo"], ("Tokyo", 1.0, 1.0, 1.0, 1)),
    ("<answer>la ville de Tokyo</answer>", ["Tokyo"], ("la ville de Tokyo", 0.0, 1.0, 1.0, 0)),
    ("<answer>Tokio</answer>", ["Tokyo"], ("Tokio", 0.0, 0.0, 1 / 3, 0)),          # {tok} of {tok, oky, kyo}
    ("<answer>Tokio</answer>", ["Tokyo", "Tokio"], ("Tokio", 1.0, 1.0, 1.0, 0)),    # an alias counts
    (f"<search>a</search>{INFO}<search>b</search>{INFO}I give up", ["Tokyo"], (None, 0.0, 0.0, 0.0, 2)),
    ("<information><answer>Tokyo</answer></information>", ["Tokyo"], (None, 0.0, 0.0, 0.0, 1)),  # a passage's
    ("Tokyo, I think.\nNo action found: end a turn with <search> query </search> to search, or with <answer> answer "
     "</answer> to answer.\n<answer> Tokyo </answer>", ["Tokyo"], ("Tokyo", 1.0, 1.0, 1.0, 0)),  # not the notice's
    ("Tokyo, I think.\nNo action found: end a turn with <search> query </search> to search, or with <answer> answer "
     "</answer> to answer.\n", ["answer"], (None, 0.0, 0.0, 0.0, 0)),
])
def test_a_qa_row_is_scored_on_its_last_answer_block(completion, answers, expected):
    row = score_rows([qa("q", completion, answers=answers)])["rows"][0]
    assert (row["extracted"], row["em"], row["fem"], round(row["c3recall"], 4), row["searches"]) == (
        expected[0], expected[1], expected[2], round(expected[3], 4), expected[4])
    assert "correct" not in row and "line_pass" not in row  # the math table's fields are not computed


def test_clr_is_the_share_of_answers_in_the_query_language():
    rows = [qa("a", "<answer>la capitale du Japon</answer>"), qa("b", "<answer>the capital of Japan</answer>"),
            qa("c", "<answer>1868</answer>", gold="1868", answers=["1868"]), qa("d", "no answer")]
    scored = score_rows(rows)
    assert [row["in_language"] for row in scored["rows"]] == [True, False, True, False]  # digits: neutral
    cell = scored["aggregate"]["fr"]
    assert (cell["clr"], cell["clr_n"], cell["fem"], cell["fem_n"]) == (0.5, 4, 0.25, 4)
    assert cell["clr_stderr"] > 0 and scored["headline"] == "fem"


def test_languages_groups_and_report_keys_carry_errors_and_counts():
    rows = [qa(f"q{i}", "<answer>Tokyo</answer>" if i < 3 else "<answer>Osaka</answer>", lang=lang)
            for lang in ("en", "fr") for i in range(4)]
    report = benchmark_report("offline_qa", score_rows(rows))
    assert report.metrics["evaluation/offline_qa/fr/fem"] == 0.75
    assert report.metrics["evaluation/offline_qa/fr/fem_n"] == 4.0
    assert report.metrics["evaluation/offline_qa/all/fem"] == 0.75  # the mean over the languages, as LcRL's tables
    assert report.metrics["evaluation/offline_qa/all/fem_n"] == 4.0   # q0-q3 asked in two languages: 4 units
    assert "evaluation/offline_qa/fr/fem_stderr" in report.metrics
    assert not any(key.endswith(("/accuracy", "/lcpr")) for key in report.metrics)
    assert [k for k in report.language_table[0] if k in ("fem", "c3recall", "clr", "em", "searches")] == [
        "fem", "c3recall", "clr", "em", "searches"]
    assert report.headline == "fem"


def test_rows_of_qa_and_math_benchmarks_are_not_scored_together():
    math = {"id": "m", "lang": "fr", "gold": "3", "benchmark": "mgsm", "completion": "\\boxed{3}"}
    with pytest.raises(ValueError, match="QA benchmarks and of other benchmarks"):
        score_rows([math, qa("q", "<answer>Tokyo</answer>")])


def test_answers_must_be_a_list_of_strings():
    out = score_rows([{**qa("q", "<answer>x</answer>"), "answers": "Tokyo"}])
    assert out["errors"][0]["field"] == "answers" and not out["rows"]


def _cells(model_fem: float, model: str) -> dict:
    return {"offline_qa": [{"lang": "fr", "headline": "fem", "fem": model_fem, "c3recall": 0.5, "clr": 1.0}],
            "mgsm": [{"lang": "fr", "headline": "accuracy", "accuracy": 0.25, "lcpr": 0.5, "slc_and_acc": 0.1,
                      "ttc": 0.2}]}


def test_a_comparison_of_math_and_qa_benchmarks_keeps_each_to_its_metrics():
    tables = {"base": _cells(0.25, "base"), "grpo": _cells(0.75, "grpo")}
    assert comparison_columns(tables, "base") == ("fem", "c3recall", "clr", "accuracy", "lcpr", "slc_and_acc", "ttc")
    rows = comparison_rows(tables, "base")
    grpo_qa = next(r for r in rows if r["model"] == "grpo" and r["benchmark"] == "offline_qa")
    assert grpo_qa["fem_delta"] == 0.5 and "accuracy_delta" not in grpo_qa
    text = format_table(rows, "base", comparison_columns(tables, "base"))
    blocks = {block.split("\n")[0]: block for block in text.split("\n\n")[1:]}
    assert "offline_qa" in blocks["fem"] and "mgsm" not in blocks["fem"]
    assert "mgsm" in blocks["accuracy"] and "offline_qa" not in blocks["accuracy"]


def test_paired_deltas_on_qa_rows():
    def scored(values):
        return [{**row, "benchmark": "offline_qa"} for row in score_rows(
            [qa(f"q{i}", f"<answer>{v}</answer>") for i, v in enumerate(values)])["rows"]]

    base, grpo = scored(["Osaka"] * 6 + ["Tokyo"] * 2), scored(["Tokyo"] * 8)
    tables = {model: {"offline_qa": [{"lang": "fr", "headline": "fem", "fem": sum(r["fem"] for r in rows) / 8}]}
              for model, rows in (("base", base), ("grpo", grpo))}
    rows = comparison_rows(tables, "base", scored={"base": {"offline_qa": base}, "grpo": {"offline_qa": grpo}})
    grpo_row = next(r for r in rows if r["model"] == "grpo")
    assert grpo_row["fem_delta"] == 0.75 and grpo_row["n_shared"] == 8
    assert grpo_row["fem_delta_low"] > 0 and grpo_row["fem_delta_significant"] is True


def _evaluation(**changes) -> dict:
    section = {"model": {"model": "m"}, "prompt": {"style": "plain"},
               "benchmarks": [{"name": "offline_qa", "languages": ["fr"]}], "search": {"max_searches": 1}}
    return {"name": "t", "evaluation": {**section, **changes}}


@pytest.mark.parametrize("changes, message", [
    ({"search": None}, "set evaluation.search"),
    ({"benchmarks": [{"name": "mgsm", "languages": ["fr"]}]}, "drop evaluation.search"),
    ({"prompt": {"style": "instruction"}}, "set evaluation.prompt.style plain"),
])
def test_qa_settings_that_cannot_work_are_refused(changes, message):
    with pytest.raises(ProfileError, match=message):
        load_profile_dict(_evaluation(**changes))
    assert load_profile_dict(_evaluation()).evaluation.qa_benchmarks() == ["offline_qa"]


@pytest.mark.parametrize("name", ["cpu-lcrl", "qwen2.5-3b-lcrl-mkqa"])
def test_lcrl_profiles_evaluate_held_out_questions_with_the_training_loop(name):
    from components.data.benchmarks import load_benchmark

    profile = load_profile(REPO / "profiles" / f"{name}.yaml")
    search, loop = profile.evaluation.search, profile.grpo.lcrl
    assert search.model_dump() == loop.model_dump(exclude={"dataset"})  # evaluated as it was trained
    train = loop.dataset
    test = next(b for b in profile.evaluation.benchmarks if b.name == train.name)
    assert test.offset >= train.limit and test.selection == train.selection == "first"  # disjoint by construction
    if name.startswith("cpu"):  # the packaged set: check the ids themselves
        def ids(bench):
            return {item.id for item in load_benchmark(bench.name, data_dir=None, languages=bench.languages,
                                                       limit=bench.limit, offset=bench.offset).items}
        assert ids(train) and ids(test) and not ids(train) & ids(test)
        assert len(ids(test)) == 8
