"""examples/verify_cases.jsonl: trusted gives the hand-written verdicts; exact shows a language gap.

FNR(l) = share of expected-true rows of language l that a verifier rejects
(arXiv 2608.20362, section 3); VLB = max_l FNR(l) - min_l FNR(l).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from components.verification import verify

CASES = Path(__file__).resolve().parents[2] / "examples" / "verify_cases.jsonl"


def _rows() -> list[dict]:
    return [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines() if line.strip()]


def _fnr(name: str, rows: list[dict], extract: bool) -> dict[str, float]:
    rejected = defaultdict(list)
    for row in rows:
        if row["expected"]:
            verdict = verify(name, row["answer"], row["gold"], row["lang"], extract=extract)
            rejected[row["lang"]].append(not verdict.correct)
    return {lang: sum(flags) / len(flags) for lang, flags in rejected.items()}


def test_file_shape():
    rows = _rows()
    assert len(rows) >= 36
    assert all(set(row) == {"id", "lang", "gold", "answer", "expected"} for row in rows)
    assert len({row["id"] for row in rows}) == len(rows)
    for lang in ("en", "ja", "zh", "fr", "de", "th"):
        assert {row["expected"] for row in rows if row["lang"] == lang} == {True, False}


@pytest.mark.parametrize("extract", [False, True])
def test_trusted_matches_every_expected_verdict(extract):
    wrong = [row["id"] for row in _rows()
             if verify("trusted", row["answer"], row["gold"], row["lang"], extract=extract).correct
             is not row["expected"]]
    assert wrong == []


@pytest.mark.parametrize("extract", [False, True])
def test_exact_has_a_language_gap(extract):
    fnr = _fnr("exact", _rows(), extract)
    assert set(fnr) == {"en", "ja", "zh", "fr", "de", "th"}
    assert max(fnr.values()) - min(fnr.values()) > 0


def test_exact_fnr_by_hand():
    # answers as written (extract=False): exact accepts only the plain gold strings
    fnr = _fnr("exact", _rows(), extract=False)
    assert fnr["en"] == pytest.approx(7 / 12)  # plain: 18, 42, 7, 250, 0.5
    assert fnr["ja"] == pytest.approx(7 / 8)  # plain: 18
    assert fnr["zh"] == pytest.approx(7 / 10)  # plain: 18, 42, 7
