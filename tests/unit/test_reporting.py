"""Report rendering: the files a benchmark logs, written once and read back for upload."""

from __future__ import annotations

import json
from pathlib import Path

from components.reporting import (
    FIGURE_FILE,
    LANGUAGES_FILE,
    METRICS_FILE,
    generations_file,
    read_report,
    write_report,
)
from components.scoring import score_file

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "score_example.jsonl"


def test_write_report_renders_every_file_and_reads_back(tmp_path):
    scores = tmp_path / "scores.json"
    scores.write_text(json.dumps(score_file(EXAMPLE, verifier="trusted")), encoding="utf-8")
    out = tmp_path / "report"

    written = write_report("mgsm", EXAMPLE, scores, out, in_domain=["fr", "ja"])

    assert (out / FIGURE_FILE).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    joined = [json.loads(line) for line in (out / generations_file("mgsm")).read_text().splitlines()]
    assert len(joined) == len(EXAMPLE.read_text().splitlines())
    assert {"completion", "correct", "extracted", "slc"} <= set(joined[0])
    assert json.loads((out / METRICS_FILE).read_text()) == written.metrics
    assert {row["lang"] for row in json.loads((out / LANGUAGES_FILE).read_text())} >= {"en", "fr", "ja"}
    assert "evaluation/mgsm/in_domain/accuracy" in written.metrics

    again = read_report("mgsm", out)
    assert again.metrics == written.metrics
    assert again.language_table == written.language_table
