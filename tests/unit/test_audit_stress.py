"""Answer-format stress suite: variant construction by hand, and the trusted/exact sanity check."""

from __future__ import annotations

from decimal import Decimal

import pytest

from components.audit.stress import build_variants, load_table, number_slots, perturb, run_stress, summarize

LANGUAGES = ["en", "ja", "zh", "fr", "de", "th"]


@pytest.mark.parametrize(
    ("gold", "slot", "expected"),
    [
        ("1234", "n_grouped", "1,234"),
        ("1234", "n_grouped_dot", "1.234"),
        ("1234", "n_grouped_space", "1\u202f234"),
        ("1234", "n_fullwidth", "１２３４"),
        ("3.5", "n_decimal_comma", "3,5"),
        ("3.5", "n_cents", "3.50"),
        ("18", "n_point_zero", "18.0"),
        ("18", "n_cents_comma", "18,00"),
        ("-5", "n_unicode_minus", "\u22125"),
        ("3000", "n_qian", "3千"),
        ("75000", "n_wan", "7.5万"),
        ("70000", "n_wan_trad", "7萬"),
        ("150000000", "n_yi", "1.5亿"),
        ("150000000", "n_yi_trad", "1.5億"),
        ("2,125", "n", "2125"),
    ],
)
def test_number_slots(gold, slot, expected):
    from components.audit.stress import parse_number

    assert number_slots(parse_number(gold))[slot] == expected


@pytest.mark.parametrize("slot", ["n_wan", "n_qian", "n_grouped", "n_decimal_comma", "n_unicode_minus"])
def test_slots_that_do_not_apply_are_absent(slot):
    assert slot not in number_slots(Decimal("18"))


@pytest.mark.parametrize(("gold", "wrong"), [("18", "19"), ("70000", "80000"), ("1234", "1235"),
                                             ("3.5", "4.5"), ("-5", "-4"), ("0", "1"), ("2,120", "2130")])
def test_perturb(gold, wrong):
    assert perturb(gold) == wrong


def test_variants_pair_each_form_and_frame_with_a_wrong_twin():
    table = {
        "common": {"frames": [{"name": "boxed", "text": "\\boxed{{answer}}"}], "forms": [{"name": "plain", "text": "{n}"}]},
        "languages": {"ja": {"frames": [{"name": "bare", "text": "{answer}", "extract": False}],
                             "forms": [{"name": "wan", "text": "{n_wan}円"}]}},
    }
    got = [(v.form, v.frame, v.text, v.correct, v.extract) for v in build_variants(["70000"], ["ja"], table)]
    assert got == [
        ("plain", "boxed", "\\boxed{70000}", True, True),
        ("plain", "bare", "70000", True, False),
        ("wan", "boxed", "\\boxed{7万円}", True, True),
        ("wan", "bare", "7万円", True, False),
        ("plain", "boxed", "\\boxed{80000}", False, True),
        ("plain", "bare", "80000", False, False),
        ("wan", "boxed", "\\boxed{8万円}", False, True),
        ("wan", "bare", "8万円", False, False),
    ]
    # 18 has no 万 form: only the plain variants remain
    assert {v.form for v in build_variants(["18"], ["ja"], table)} == {"plain"}


def test_packaged_table_covers_the_required_languages():
    assert set(LANGUAGES) <= set(load_table()["languages"])
    with pytest.raises(ValueError, match="no language 'xx'"):
        build_variants(["18"], ["xx"])


def test_summarize_by_hand():
    records = [
        {"lang": "zh", "correct": True, "exact": True},
        {"lang": "zh", "correct": True, "exact": False},
        {"lang": "zh", "correct": True, "exact": False},
        {"lang": "zh", "correct": False, "exact": False},
        {"lang": "zh", "correct": False, "exact": True},
    ]
    assert summarize(records, ["exact"]) == {
        "exact": {"zh": {"correct": 3, "wrong": 2, "accept_correct": pytest.approx(1 / 3), "reject_wrong": 0.5}}
    }


def test_trusted_accepts_correct_variants_and_rejects_wrong_ones_exact_does_not():
    summary, records = run_stress(["trusted", "exact"], LANGUAGES, golds=["18", "1234", "70000", "3.5"])
    exact_accept = {}
    for lang in LANGUAGES:
        trusted = summary["trusted"][lang]
        assert trusted["correct"] >= 40 and trusted["wrong"] >= 40
        assert trusted["accept_correct"] >= 0.95, lang
        assert trusted["reject_wrong"] == 1.0, lang
        exact = summary["exact"][lang]
        assert exact["accept_correct"] <= trusted["accept_correct"] - 0.5, lang
        exact_accept[lang] = exact["accept_correct"]
    # exact's false-negative rate on the suite differs between languages
    assert max(exact_accept.values()) - min(exact_accept.values()) > 0.02
    # the suite's signature cases
    verdicts = {(r["lang"], r["text"]): (r["trusted"], r["exact"]) for r in records}
    assert verdicts[("ja", "答えは１８です。")] == (True, False)
    assert verdicts[("zh", "\\boxed{7万}")] == (True, False)
    assert verdicts[("ja", "答えは8万円です。")] == (False, False)
    assert verdicts[("de", "Die Antwort ist 1.234.")] == (True, False)
