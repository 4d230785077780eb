"""``polyreason score``: a table with 95% intervals by default, the JSON (intervals included) with ``--json``, and
``--explain ID``: one row's LCPR verdict line by line."""

from __future__ import annotations

import json

import pytest
from scipy.stats import binomtest
from typer.testing import CliRunner

from cli.app import app

FRENCH = "Calculons d'abord le nombre total de pommes.\n\nIl en reste donc {n}, que nous vendons au marché."
SPANISH = ("Los patos de Janet ponen 16 huevos por día.\nTotal: 16 - 3 = 13.\nEntonces, 13 x 2 = 26.\n"
           "Vende los huevos que sobran en el mercado cada día.\n"
           "Wait, let me double-check how many eggs she sells at the market.\n**Respuesta: 18**")


@pytest.fixture
def eight_french(tmp_path):
    """Eight French problems, every answer right."""
    path = tmp_path / "fr.jsonl"
    rows = [{"id": f"p{n}", "lang": "fr", "gold": str(n), "benchmark": "mgsm",
             "completion": f"<think>\n{FRENCH.format(n=n)}\n</think>\n\nLa réponse est \\boxed{{{n}}}."}
            for n in range(1, 9)]
    rows.append({"id": "es-1", "lang": "es", "gold": "18", "benchmark": "mgsm", "sample_index": 2,
                 "completion": f"<think>\n{SPANISH}\n</think>\\boxed{{18}}"})
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


def test_score_gives_wilson_intervals_in_the_json_and_the_table(eight_french):
    wilson = binomtest(8, 8).proportion_ci(confidence_level=0.95, method="wilson")   # the oracle: scipy's
    machine = CliRunner().invoke(app, ["score", str(eight_french), "--json"])
    assert machine.exit_code == 0, machine.output
    fr = json.loads(machine.stdout)["aggregate"]["fr"]
    assert (fr["accuracy"], fr["accuracy_n"]) == (1.0, 8)
    assert (fr["accuracy_low"], fr["accuracy_high"]) == pytest.approx((wilson.low, wilson.high))
    assert "Wilson" in json.loads(machine.stdout)["interval_method"]

    text = CliRunner().invoke(app, ["score", str(eight_french)])
    assert text.exit_code == 0, text.output
    assert f"mgsm       fr       1.000 [{wilson.low:.3f}, 1.000] (n 8)" in text.stdout   # 8/8: [0.676, 1.000]
    assert "Wilson's score interval" in text.stdout and not text.stdout.lstrip().startswith("{")


def test_explain_shows_a_row_line_by_line_and_names_the_failing_line(eight_french):
    text = CliRunner().invoke(app, ["score", str(eight_french), "--explain", "es-1"])
    assert text.exit_code == 0, text.output
    lines = text.stdout.splitlines()
    assert lines[0] == "id es-1, lang es, sample 2, rule adamame: line level FAIL, word level pass"
    failing = [line for line in lines if line.lstrip().startswith("FAIL")]
    assert len(failing) == 1 and failing[0].endswith("Wait, let me double-check how many eggs she sells at the market.")
    assert any(line.lstrip().startswith("undecided") and line.endswith("Total: .") for line in lines)

    machine = json.loads(CliRunner().invoke(app, ["score", str(eight_french), "--explain", "es-1", "--json"]).stdout)
    (row,) = machine["rows"]
    assert row["failed_lines"] == [{"line": "Wait, let me double-check how many eggs she sells at the market.",
                                    "detected": "en"}]
    assert [line["verdict"] for line in row["lines"]] == ["pass", "undecided", "undecided", "pass", "fail", "undecided"]


def test_explain_of_an_unknown_id_is_refused(eight_french):
    result = CliRunner().invoke(app, ["score", str(eight_french), "--explain", "nope"])
    assert result.exit_code == 2 and "no valid row with id 'nope'" in result.output
