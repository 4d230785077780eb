"""A metric added in one place (one entry of the metric table, here in a fixture) reaches every output:
scored rows, per-language and group aggregates with their errors, the rendered report, the MLflow run of
the evaluation, and ``polyreason compare``'s paired comparison read back from that store. The same run holds
the evidence beside LCPR: every line that failed the line level, as a table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.metrics.metric import RowField, row_mean
from components.metrics.registry import METRICS, columns, compared
from components.reports.benchmark import write_report
from components.scoring import read_jsonl_rows, score_file
from components.settings import ScoringSettings, TrackingSettings
from runtime import tracking
from runtime.artifacts import ArtifactRef

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "score_example.jsonl"
SETTINGS = ScoringSettings(verifier="trusted", in_domain=["fr", "ja"], bootstrap_resamples=200)


@pytest.fixture
def answer_chars(monkeypatch):
    """The new metric: mean characters of the final answer part (after ``</think>``), lower is better."""
    field = RowField("answer_chars", lambda sample: len(sample.completion.rpartition("</think>")[2]))
    entry = row_mean("answer_chars", field, lambda row: row["answer_chars"], column=True, compared=True,
                     higher_is_better=False)
    monkeypatch.setitem(METRICS, "answer_chars", entry)
    return "answer_chars"


def expected_chars(path: Path, lang: str) -> float:
    rows = [row for _, row in read_jsonl_rows(path)[0] if row["lang"] == lang]
    return sum(len(row["completion"].rpartition("</think>")[2]) for row in rows) / len(rows)


def evaluation_run(tmp_path: Path, name: str, generations: Path, uri: str):
    """Score, render and log one evaluation the way the evaluation flow's tasks do."""
    from tasks.evaluation import log_benchmark_task

    scores = tmp_path / name / "scores.json"
    scores.parent.mkdir(parents=True)
    scores.write_text(json.dumps(score_file(generations, SETTINGS)), encoding="utf-8")
    write_report("mgsm", generations, scores, tmp_path / name / "report")
    run = tracking.open_run(TrackingSettings(tracking_uri=uri, experiment="entry"), tmp_path, name,
                            tags={"polyreason.model_tag": name, "polyreason.stage": "evaluation"})
    log_benchmark_task.fn(run, "mgsm", ArtifactRef(str(tmp_path / name / "report"), "r"),
                          ArtifactRef(str(scores), "s", {"errors": 0}), [])
    tracking.finish_run(run)  # closed as the flow closes it: no run of this test stays open for later ones
    return run, json.loads(scores.read_text(encoding="utf-8"))


def failed_lines_table(client, run_id: str, tmp_path: Path) -> list[dict]:
    """The run's ``evaluation/mgsm/failed_lines.json`` table, read back as records (MLflow's log_table layout)."""
    path = client.download_artifacts(run_id, "evaluation/mgsm/failed_lines.json", str(tmp_path / "downloaded"))
    saved = json.loads(Path(path).read_text(encoding="utf-8"))
    return [dict(zip(saved["columns"], row)) for row in saved["data"]]


def test_one_entry_reaches_scores_aggregates_reports_mlflow_and_the_comparison(tmp_path, answer_chars):
    from runtime.project import Project
    from tasks.compare import gather_task, render_task

    assert answer_chars in columns() and answer_chars in compared()
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    run, result = evaluation_run(tmp_path, "base", EXAMPLE, uri)

    row = result["rows"][0]
    assert row[answer_chars] == len(json.loads(EXAMPLE.read_text().splitlines()[0])["completion"].rpartition(
        "</think>")[2])
    fr = result["aggregate"]["fr"]
    assert fr[answer_chars] == pytest.approx(expected_chars(EXAMPLE, "fr")) and fr[f"{answer_chars}_n"] == 2
    # n counts problems (fr: 3 samples of 2; in_domain: the same 2 problems in fr and ja)
    assert fr[f"{answer_chars}_stderr"] is not None and result["groups"]["in_domain"][f"{answer_chars}_n"] == 2

    assert failed_lines_table(tracking.client(uri), run.run_id, tmp_path) == [   # the example's two English lines
        {"id": "mgsm-0000", "lang": "fr", "sample_index": 1, "line": "Wait, let me recompute the remaining eggs first.",
         "detected": "en"},
        {"id": "mgsm-0000", "lang": "ja", "sample_index": 1, "line": "So she has eggs left after breakfast and baking.",
         "detected": "en"}]

    logged = tracking.client(uri).get_run(run.run_id).data.metrics
    for cell in ("fr", "overall", "in_domain"):
        assert {f"evaluation/mgsm/{cell}/{answer_chars}{tail}" for tail in ("", "_stderr", "_n")} <= set(logged)
    assert logged[f"evaluation/mgsm/fr/{answer_chars}"] == pytest.approx(expected_chars(EXAMPLE, "fr"))

    # a second model that answers without thinking: the same problems, shorter answers
    terse = tmp_path / "terse.jsonl"
    rows = [row for _, row in read_jsonl_rows(EXAMPLE)[0]]
    terse.write_text("".join(json.dumps({**r, "completion": f"\\boxed{{{r['gold']}}}"}) + "\n" for r in rows))
    other, _ = evaluation_run(tmp_path, "terse", terse, uri)

    evaluations = gather_task.fn(uri, [run.run_id, other.run_id], Project(str(tmp_path)))
    assert set(evaluations.scored["terse"]) == {"mgsm"}              # the scored rows came back from the store
    comparison = render_task.fn(evaluations, "base", Project(str(tmp_path)))
    terse_fr = next(r for r in comparison.summary["rows"] if (r["model"], r["lang"]) == ("terse", "fr"))
    delta = f"{answer_chars}_delta"
    assert terse_fr[delta] == pytest.approx(expected_chars(terse, "fr") - expected_chars(EXAMPLE, "fr"))
    assert terse_fr[f"{delta}_low"] <= terse_fr[delta] <= terse_fr[f"{delta}_high"] and terse_fr["n_shared"] == 2
    assert answer_chars in (Path(comparison.path) / "comparison.txt").read_text(encoding="utf-8")
