"""Report rendering: the files a benchmark logs, written once and read back for upload."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.metrics.registry import columns
from components.reports.benchmark import (
    FIGURE_FILE,
    LANGUAGES_FILE,
    METRICS_FILE,
    generations_file,
    read_report,
    write_report,
)
from components.scoring import score_file
from components.settings import ScoringSettings

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "score_example.jsonl"


def test_write_report_renders_every_file_and_reads_back(tmp_path):
    scores = tmp_path / "scores.json"
    result = score_file(EXAMPLE, ScoringSettings(verifier="trusted", in_domain=["fr", "ja"]))
    scores.write_text(json.dumps(result), encoding="utf-8")
    out = tmp_path / "report"

    written = write_report("mgsm", EXAMPLE, scores, out)

    assert (out / FIGURE_FILE).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    joined = [json.loads(line) for line in (out / generations_file("mgsm")).read_text().splitlines()]
    assert len(joined) == len(EXAMPLE.read_text().splitlines())
    assert {"completion", "correct", "extracted", "slc"} <= set(joined[0])
    assert json.loads((out / METRICS_FILE).read_text()) == written.metrics
    assert {row["lang"] for row in json.loads((out / LANGUAGES_FILE).read_text())} >= {"en", "fr", "ja"}
    assert [row["lang"] for row in written.language_table] == ["en", "fr", "ja", "pt", "th", "zh", "overall"]
    assert set(written.language_table[0]) == {"lang", "headline", "n_rows",
                                              *(f"{m}{tail}" for m in columns() for tail in ("", "_stderr", "_n"))}
    en = next(row for row in written.language_table if row["lang"] == "en")
    assert en["accuracy_n"] == 2 and en["n_rows"] == 3 and en["accuracy_stderr"] is not None   # 3 samples, 2 problems

    # the groups are the scores' groups, built with in_domain = fr, ja
    per_lang = result["aggregate"]
    def mean(langs, metric):
        return sum(per_lang[lang][metric] for lang in langs) / len(langs)
    for metric in ("accuracy", "lcpr", "slc"):
        assert written.metrics[f"evaluation/mgsm/in_domain/{metric}"] == pytest.approx(mean(["fr", "ja"], metric))
        assert written.metrics[f"evaluation/mgsm/out_of_domain/{metric}"] == pytest.approx(
            mean(["en", "pt", "th", "zh"], metric))
    assert written.metrics["evaluation/mgsm/in_domain/n_languages"] == 2
    assert written.metrics["evaluation/mgsm/out_of_domain/n_languages"] == 4
    assert mean(["fr", "ja"], "accuracy") != mean(["fr", "ja", "pt", "th"], "accuracy")  # the default would differ

    again = read_report("mgsm", out)
    assert again.metrics == written.metrics
    assert again.language_table == written.language_table
    # the lines that failed the line level, one record each (the example's fr and ja samples 1 switch to English)
    assert [(r["lang"], r["id"], r["sample_index"], r["detected"]) for r in again.failed_lines] == [
        ("fr", "mgsm-0000", 1, "en"), ("ja", "mgsm-0000", 1, "en")]
    assert again.failed_lines[0]["line"] == "Wait, let me recompute the remaining eggs first."
