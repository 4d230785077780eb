"""polyreason against the upstream code itself, where checkouts are at hand.

The checkouts live outside the repository, under ``$POLYREASON_UPSTREAM_DIR`` (default
``../upstream`` beside the repository; ``bench/locations.py``): ``adamame`` and
``language-confusion`` for the ``_reference`` LCPR rules, ``Math-Verify`` for the verifiers.
Each test is skipped, naming the folder it looked for, when its checkout is absent (CI has
none). The upstream modules are imported unmodified, with one lingua detector on both sides
(``bench/conformance.py`` explains how); Math-Verify's tests are read as data.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.append(str(BENCH))
from locations import upstream_checkout  # noqa: E402

ADAMAME, LCB, MATH_VERIFY = (upstream_checkout(name) for name in ("adamame", "lcb", "math_verify"))
needs_lcpr_checkouts = pytest.mark.skipif(
    not (ADAMAME / "3_eval" / "metrics.py").exists() or not (LCB / "compute_metrics.py").exists(),
    reason=f"upstream checkouts {ADAMAME} and {LCB} not found (set POLYREASON_UPSTREAM_DIR)",
)
needs_math_verify_checkout = pytest.mark.skipif(
    not (MATH_VERIFY / "tests").is_dir(),
    reason=f"Math-Verify checkout {MATH_VERIFY} not found (set POLYREASON_UPSTREAM_DIR)",
)


@pytest.fixture(scope="module")
def upstream():
    import conformance

    from components.language import get_detector

    detector = get_detector()
    return conformance, detector, conformance.load_adamame(ADAMAME, detector._detector), conformance.load_lcb(LCB, detector)


@needs_lcpr_checkouts
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


@needs_lcpr_checkouts
def test_reference_rules_agree_with_upstream_on_the_corpus(upstream, shared_data):
    conformance, *_ = upstream
    from conformance_corpus import build_corpus

    result = conformance.run_lcpr(ADAMAME, LCB, build_corpus(shared_data / "mgsm" / "exemplars.json"))
    for rule in ("adamame_reference", "lcb_reference"):
        assert result["agreement"][rule]["all"] == {"line": 1.0, "word": 1.0}, result["disagreements"][rule][:5]


@needs_math_verify_checkout
def test_trusted_explains_every_disagreement_with_math_verifys_suite():
    """Math-Verify meets its own expectations; trusted differs on numeric golds only for a stated reason."""
    from conformance_math_verify import judge_all, read_cases

    cases, _ = read_cases(MATH_VERIFY)
    table = judge_all(cases, ["trusted"])
    assert len(cases) > 200 and table["upstream"]["misses"] == []
    unexplained = [m["case"] for m in table["trusted"]["misses"] if m["numeric_gold"] and m["reason"] is None]
    assert unexplained == []
    assert table["trusted"]["numeric_gold"]["agreement"] >= 0.97
