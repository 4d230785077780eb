"""Rollout diagnostics on hand-computed examples (FNR, FPR, Err, pressure, VLB) and bad rows."""

from __future__ import annotations

import pytest

from components.audit.diagnostics import Judgement, accuracy_by_language, diagnose, judge_rows, vlb


def _judgements(lang: str, trusted: list[bool], exact: list[bool]) -> list[Judgement]:
    return [Judgement(i, f"p{i}", lang, t, {"exact": e}) for i, (t, e) in enumerate(zip(trusted, exact))]


# en: trusted T T T F, exact T F T F -> 3 positives, 1 FN; 1 negative, 0 FP; 1 disagreement of 4
# ja: trusted T T F F, exact F F F T -> 2 positives, 2 FN; 2 negatives, 1 FP; 3 disagreements of 4
# zh: trusted F F,     exact F F     -> no positives (FNR undefined); 2 negatives, 0 FP
JUDGEMENTS = (
    _judgements("en", [True, True, True, False], [True, False, True, False])
    + _judgements("ja", [True, True, False, False], [False, False, False, True])
    + _judgements("zh", [False, False], [False, False])
)

EXPECTED = {  # lang: (fnr, fpr, err, pressure, trusted accuracy, proxy accuracy)
    "en": (1 / 3, 0.0, 0.25, -0.25, 0.75, 0.5),
    "ja": (1.0, 0.5, 0.75, -0.75, 0.5, 0.25),
    "zh": (None, 0.0, 0.0, -0.0, 0.0, 0.0),
}


@pytest.mark.parametrize("lang", sorted(EXPECTED))
def test_rates_per_language(lang):
    rates = diagnose(JUDGEMENTS, ["exact"])["exact"].per_lang[lang]
    fnr, fpr, err, pressure, acc, proxy_acc = EXPECTED[lang]
    assert rates.fnr == (pytest.approx(fnr) if fnr is not None else None)
    assert rates.fpr == pytest.approx(fpr)
    assert rates.err == pytest.approx(err)
    assert rates.pressure == pytest.approx(pressure)
    assert rates.reference_accuracy == pytest.approx(acc)
    assert rates.proxy_accuracy == pytest.approx(proxy_acc)


def test_vlb_excludes_undefined_languages():
    bias = diagnose(JUDGEMENTS, ["exact"])["exact"].vlb
    assert bias["fnr"] == pytest.approx(1.0 - 1 / 3)  # zh has no positives: left out
    assert bias["fpr"] == pytest.approx(0.5)
    assert bias["err"] == pytest.approx(0.75)


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"en": 0.122, "ja": 0.642, "zh": 0.073}, 0.569),  # the paper's Qwen3-8B exact-match FNR
        ({"en": 0.2, "ja": None}, None),  # one defined language: no gap
        ({}, None),
        ({"en": 0.0, "ja": 0.0}, 0.0),
    ],
)
def test_vlb(values, expected):
    assert vlb(values) == (pytest.approx(expected) if expected is not None else None)


def test_accuracy_by_language():
    assert accuracy_by_language(JUDGEMENTS) == {"en": 0.75, "ja": 0.5, "zh": 0.0}


def test_bad_language_rows_are_reported_and_left_out():
    rows = [
        {"id": "a", "lang": "ja", "gold": "18", "completion": "\\boxed{18円}"},
        {"id": "b", "lang": None, "gold": "18", "completion": "\\boxed{18}"},
        {"id": "c", "gold": "18", "completion": "\\boxed{18}"},
        {"id": "d", "lang": "xx", "gold": "18", "completion": "\\boxed{18}"},
        {"id": "e", "lang": "  ", "gold": "18", "completion": "\\boxed{18}"},
        {"id": "f", "lang": "en", "gold": "18", "completion": "\\boxed{18}"},
        {"id": "g", "lang": "en", "gold": None, "completion": "\\boxed{18}"},
        {"id": "h", "lang": "en", "gold": "18", "completion": None},
    ]
    judgements, errors = judge_rows(rows, ["exact"])
    assert [(e["row"], e["id"]) for e in errors] == [(1, "b"), (2, "c"), (3, "d"), (4, "e"), (6, "g"), (7, "h")]
    assert errors[2]["error"] == "unknown language 'xx'"
    assert errors[0]["error"] == errors[1]["error"] == "missing language"
    assert [(j.row, j.lang) for j in judgements] == [(0, "ja"), (5, "en")]
    per_lang = diagnose(judgements, ["exact"])["exact"].per_lang
    assert {lang: r.n for lang, r in per_lang.items()} == {"en": 1, "ja": 1}


def test_known_languages_restricts_the_audit():
    rows = [{"id": "a", "lang": "fr", "gold": "3", "completion": "\\boxed{3}"}]
    judgements, errors = judge_rows(rows, ["exact"], known_languages=["en", "ja"])
    assert judgements == [] and errors[0]["error"] == "unknown language 'fr'"


def test_judge_rows_uses_the_response_after_think_and_keeps_the_trusted_answer():
    rows = [{"id": "a", "lang": "ja", "gold": "18", "sample_index": 3,
             "completion": "<think>\\boxed{17}</think>答えは\\boxed{１８円}"}]
    (judgement,), errors = judge_rows(rows, ["exact"])
    assert errors == []
    assert judgement.reference is True and judgement.proxies == {"exact": False}
    assert judgement.sample_index == 3 and judgement.answer == "18"
