"""``polyreason score`` holds no rows: each scored row goes out as it is judged and the aggregates keep a few numbers
per problem (``components.metrics.problems``). The numbers must be those of the rows held, and the JSON the text
``json.dumps`` gives the whole result."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cli.app import app
from cli.score_output import RowSpool, json_pieces
from components.data.benchmarks import SCHEMES
from components.metrics import aggregate
from components.metrics.bootstrap import Bootstrap
from components.metrics.problems import ProblemStream
from components.metrics.registry import metrics
from components.scoring import score_file
from components.settings import ScoringSettings

TRACE = {"fr": "Nous comptons les pommes du panier une par une.", "en": "We count the apples in the basket one by one."}


def _row(problem: int, sample: int, lang: str, right: bool, **extra) -> dict:
    gold = str(problem + 10)
    answer = gold if right else "0"
    return {"id": f"q{problem}", "lang": lang, "gold": gold, "sample_index": sample, **extra,
            "completion": f"<think>\n{TRACE[lang]}\n</think>\n\\boxed{{{answer}}}"}


@pytest.fixture
def interleaved(tmp_path):
    """Two benchmarks (MMATH averaged over its sources), samples of one problem far apart (sample-major), problems
    of 1 to 3 samples, a repeat and a row without benchmark left out."""
    rows = []
    for sample in range(3):
        for problem in range(6):
            if sample < problem % 3 + 1:
                lang = "fr" if problem % 2 else "en"
                rows.append(_row(problem, sample, lang, (problem + sample) % 3 != 0, benchmark="mgsm"))
                rows.append(_row(problem, sample, lang, problem % 2 == 0, benchmark="mmath",
                                 source=["MATH500", "AIME2024"][problem % 2]))
    rows.insert(3, dict(rows[1]))
    rows.insert(5, {**_row(9, 0, "fr", True), "benchmark": None})
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_streamed_scoring_gives_the_rows_and_the_numbers_of_the_rows_held(interleaved):
    settings = ScoringSettings(verifier="exact", pass_k=(1, 2))
    spool = RowSpool()
    streamed = score_file(interleaved, settings, rows_to=spool.write)
    held = score_file(interleaved, settings)
    rows = list(spool.rows())
    assert rows == held["rows"] and spool.count == 24 and "rows" not in streamed
    assert streamed == {key: value for key, value in held.items() if key != "rows"}
    # the oracle: the aggregates over the scored rows in one list (rows grouped by problem as they stand)
    options = {"pass_k": (1, 2), "bootstrap": Bootstrap(settings.bootstrap_resamples, settings.bootstrap_seed),
               "schemes": SCHEMES}
    assert streamed["by_benchmark"] == aggregate.per_benchmark(rows, **options)
    assert streamed["aggregate"] == aggregate.per_language(rows, **options)
    assert streamed["groups"] == aggregate.group_means(rows, settings.in_domain, **options)
    assert [error["line"] for error in streamed["errors"]] == [4, 6]


def test_a_problem_reduced_from_samples_far_apart_is_counted_by_hand():
    """pass@2 of [right, wrong] is 1 and of [wrong, wrong] 0; the samples arrive sample-major."""
    table = metrics((1, 2))
    stream = ProblemStream(table, {(None, "fr", "a"): 2, (None, "fr", "b"): 2})
    for row in [{"id": "a", "correct": True}, {"id": "b", "correct": False}, {"id": "a", "correct": False},
                {"id": "b", "correct": False}]:
        stream.add({"lang": "fr", **row})
    cell = aggregate.summarize(stream.problems(), pass_k=(1, 2))
    assert (cell["accuracy"], cell["pass_at_2"], cell["avg_at_2"], cell["n_rows"], cell["n_problems"]) == \
        (0.25, 0.5, 0.25, 4, 2)
    with pytest.raises(ValueError, match="more samples than the 2 counted"):
        stream.add({"lang": "fr", "id": "a", "correct": True})


@pytest.mark.parametrize("value", ["plain", "a\u2028line separator\nand a break", "http://alice:PASS@host/v1", 1.5e-7,
                                   None, ["ja", "日本語"]])
def test_the_json_in_pieces_is_the_text_of_the_whole_result(value):
    from cli.terminal import as_json

    rows = [{"id": "1", "extracted": value, "failed_lines": [value, value]}, {"id": "2", "extracted": None}]
    spool = RowSpool()
    spool.write(rows)
    rest = {"aggregate": {"fr": {"accuracy": 0.5, "note": value}}, "errors": []}
    assert "".join(json_pieces(rest, spool.rows())) == as_json({"rows": rows, **rest})


def test_the_command_writes_the_same_json_to_out_and_stdout(interleaved, tmp_path):
    out = tmp_path / "out.json"
    machine = CliRunner().invoke(app, ["score", str(interleaved), "--verifier", "exact", "--json", "--out", str(out)])
    assert machine.exit_code == 0, machine.output
    assert out.read_text(encoding="utf-8") == machine.stdout
    result = json.loads(machine.stdout)
    assert len(result["rows"]) == 24 and list(result)[:2] == ["rows", "aggregate"]
