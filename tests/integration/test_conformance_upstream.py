"""The ``_reference`` LCPR rules against the upstream code itself, where checkouts are at hand.

Needs local checkouts of ``dayeonki/adamame`` and ``for-ai/language-confusion`` under
``$POLYREASON_UPSTREAM_DIR`` (default ``/work/ref``, folders ``dayeonki+adamame`` and
``for-ai+language-confusion``); skipped otherwise. The upstream modules are imported
unmodified, with one lingua detector on both sides (``bench/conformance.py`` explains how).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(os.environ.get("POLYREASON_UPSTREAM_DIR", "/work/ref"))
ADAMAME, LCB = ROOT / "dayeonki+adamame", ROOT / "for-ai+language-confusion"
BENCH = Path(__file__).resolve().parents[2] / "bench"
pytestmark = pytest.mark.skipif(
    not (ADAMAME / "3_eval" / "metrics.py").exists() or not (LCB / "compute_metrics.py").exists(),
    reason=f"upstream checkouts not found under {ROOT}",
)


@pytest.fixture(scope="module")
def upstream():
    sys.path.insert(0, str(BENCH))
    import conformance
    from components.language import get_detector

    detector = get_detector()
    return conformance, detector, conformance.load_adamame(ADAMAME, detector._detector), conformance.load_lcb(LCB, detector)


def test_hand_written_reference_verdicts_are_upstreams(upstream):
    from tests.unit.test_conformance_lcpr import ADAMAME as ADAMAME_CASES
    from tests.unit.test_conformance_lcpr import LCB as LCB_CASES

    conformance, _, adamame, lcb = upstream
    for case, lang, completion, _, reference in ADAMAME_CASES:
        line, word = conformance.upstream_adamame(adamame, completion, lang)
        assert (line, word) == (reference[0], reference[1] if line else None), case
    for case, lang, trace, _, reference in LCB_CASES:
        line, word = conformance.upstream_lcb(lcb, trace, lang)
        assert (line, word) == (reference[0], reference[1] if line else None), case


def test_reference_rules_agree_with_upstream_on_the_corpus(upstream):
    conformance, *_ = upstream
    from conformance_corpus import build_corpus

    args = type("Args", (), {"adamame": str(ADAMAME), "lcb": str(LCB)})
    result = conformance.run_lcpr(args, build_corpus(conformance.EXEMPLARS))
    for rule in ("adamame_reference", "lcb_reference"):
        assert result["agreement"][rule]["all"] == {"line": 1.0, "word": 1.0}, result["disagreements"][rule][:5]
