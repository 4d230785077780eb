"""LCPR conformance: the corrected rules and the reference variants on the classes where they differ.

Each case names the class of difference between polyreason's rules and the upstream code
(AdaMame's evaluation script, the Language Confusion Benchmark's ``compute_metrics.py``), and
gives the verdicts by hand for the corrected rule and for its ``_reference`` variant, which
must behave as upstream does. Traces are written for these tests.
"""

from __future__ import annotations

import pytest

from components.language import detect_block, get_detector, holds_words
from components.metrics.lcpr import RULES, get_rule, judge_trace, line_pass, load_english_words, word_pass


@pytest.fixture(scope="module")
def detector():
    return get_detector()


@pytest.fixture(scope="module")
def words(shared_data):
    return load_english_words(shared_data / "language_confusion" / "words")


ZH = "首先，我们计算每天剩下的鸡蛋数量。"
ZH_END = "所以她每天赚十八美元。"
JA = "まず、毎日残る卵の数を計算します。"
JA_END = "したがって、答えは十八です。"
FR = "Calculons d'abord le nombre total de pommes."
FR_END = "Donc la réponse est dix-huit euros."


def think(*lines: str) -> str:
    return "<think>\n" + "\n".join(lines) + "\n</think>\n\n\\boxed{18}"


# (case, lang, completion, adamame (line, word), adamame_reference (line, word))
ADAMAME = [
    ("command-inside-inline-math", "zh", think(ZH, "所以 $\\text{total} = 9$。", ZH_END), (True, True), (True, True)),
    ("ok-is-a-word", "ja", think(JA, "OK、次に進みます。", JA_END), (True, False), (True, False)),
    ("geometry-label", "ja", think("線分ABの長さを求めます。", JA_END), (True, True), (True, False)),
    ("math-and-unit-line", "zh", think(ZH, "AB = 5 cm, π ≈ 3.14", ZH_END), (True, True), (False, False)),
    ("variable-only-line", "fr", think(FR, "x", FR_END), (True, True), (True, True)),
    ("lone-greek-in-latin-language", "fr", think(FR, "Soit π le rapport du cercle.", FR_END), (True, True), (True, False)),
    ("no-think-tags", "zh", ZH + "\nSo the answer is eighteen dollars.\n\\boxed{18}", (False, False), (True, True)),
    ("dollar-amounts-swallow-words", "ja", think("リンゴは$5で so the total ミカンは$6です。", JA_END),
     (True, False), (True, True)),
    ("english-line", "zh", think(ZH, "Wait, let me double-check this calculation.", ZH_END), (False, False), (False, False)),
    ("display-math-over-lines", "fr", think(FR, "$$", "x + y = total", "$$", FR_END), (True, True), (False, True)),
    ("letterless-trace", "fr", think("12 + 3 = 15"), (None, None), (True, True)),
    ("first-closing-tag", "fr", f"<think>{FR}</think>\nWait, let me double-check this one.\n</think>\\boxed{{18}}",
     (False, True), (True, True)),
    ("full-width-latin-word", "ja", think("まず、ｔｏｔａｌを計算します。", JA_END), (True, False), (True, True)),
]


@pytest.mark.parametrize("case,lang,completion,default,reference", ADAMAME, ids=[c[0] for c in ADAMAME])
def test_adamame_rules(detector, case, lang, completion, default, reference):
    for rule, expected in (("adamame", default), ("adamame_reference", reference)):
        verdict = judge_trace(completion, lang, detector, rule)
        assert (verdict["line_pass"], verdict["word_pass"]) == expected, rule


LONG_ZH = "首先 我们 计算 每天 剩下 的 鸡蛋 数量"
LONG_JA = "まず 残り の 卵 の 数 を 計算 します"
LONG_RU = "Сначала вычислим, сколько яиц остаётся каждый день."
LONG_TH = "ก่อนอื่น เราคำนวณ จำนวนไข่ ที่เหลือ ในแต่ละวัน ของเธอ"
# (case, lang, trace, lcb (line, word), lcb_reference (line, word))
LCB = [
    ("hyphenated-english", "ru", f"{LONG_RU}\nЗатем решаем задачу step-by-step очень аккуратно.", (True, False), (True, True)),
    ("quoted-english", "ru", f"{LONG_RU}\nЗатем считаем «total» всех яиц очень аккуратно.", (True, False), (True, True)),
    ("short-english-line-in-chinese", "zh", f"{LONG_ZH}\nThe answer is 8", (True, True), (False, False)),
    ("english-word-in-chinese", "zh", f"{LONG_ZH}\n然后 我们 用 total 表示 总数", (True, False), (True, False)),
    ("wpr-languages-thai", "th", f"{LONG_TH}\n{LONG_TH} total", (True, False), (True, None)),
    ("wpr-languages-japanese", "ja", f"{LONG_JA}\n次に total の 卵 を 数え ます", (True, False), (True, False)),
    ("math-line-detected-raw", "fr", f"{FR}\n5 + 6 = 11, 11 + 2 = 13", (True, None), (False, None)),
    ("units-line", "ru", f"{LONG_RU}\nAB = 5 cm, π ≈ 3.14, BC = 4 cm", (True, True), (False, True)),
    ("apostrophe-word", "ru", f"{LONG_RU}\nЗатем can't считаем все яйца снова.", (True, True), (True, False)),
    ("nothing-kept", "fr", "Oui.\nDonc dix.", (None, None), (None, None)),
]


@pytest.mark.parametrize("case,lang,trace,default,reference", LCB, ids=[c[0] for c in LCB])
def test_lcb_rules(detector, words, case, lang, trace, default, reference):
    for rule, expected in (("lcb", default), ("lcb_reference", reference)):
        verdict = judge_trace(trace, lang, detector, rule, words)
        assert (verdict["line_pass"], verdict["word_pass"]) == expected, rule


@pytest.mark.parametrize("text,expected", [
    ("AB = 5 cm, π ≈ 3.14", False), ("x", False), ("ＡＢ", False), ("OK", True), ("cm입니다", True),
    ("Donc", True), ("αβ", True), ("", False), ("km h", False),
])
def test_wordless_lines(text, expected):
    assert holds_words(text) is expected


@pytest.mark.parametrize("text,expected", [
    ("首先，我们计算每天剩下的鸡蛋数量和总价。\n次に計算します。\n所以她每天一共赚十八美元。", "zh"),
    ("まず、毎日残る卵の数を計算します。\n我们计算。\nしたがって、答えは十八です。", "ja"),
    ("Calculons le total des pommes.\nLet me check.", "fr"),
    ("cm\nx", None),
])
def test_lang_detected_is_the_character_weighted_majority(detector, text, expected):
    assert detect_block(detector, text) == expected


@pytest.mark.parametrize("name", sorted(RULES))
def test_rule_registry_contract(detector, words, name):
    rule = get_rule(name)
    assert rule.name == name and isinstance(rule.needs_words, bool)
    verdict = judge_trace(think(ZH, ZH_END, "然后我们把所有的鸡蛋加起来。"), "zh", detector, name, words)
    assert verdict["line_pass"] is True and verdict["word_pass"] in (True, None)
    assert line_pass(verdict["trace"], "zh", detector, name, words) is True


def test_unknown_rule_names_the_known_ones(detector):
    with pytest.raises(ValueError, match="adamame_reference"):
        get_rule("fasttext")


@pytest.mark.parametrize("name", ["lcb", "lcb_reference"])
def test_lcb_rules_need_the_word_list(name):
    with pytest.raises(ValueError, match="word list"):
        word_pass(LONG_JA, "ja", rule=name)


def test_scoring_settings_accept_every_registered_rule():
    from components.settings import ScoringSettings

    assert ScoringSettings(lcpr_rule="lcb_reference", words_path="words").lcpr_rule == "lcb_reference"
    assert ScoringSettings(lcpr_rule="adamame_reference").lcpr_rule == "adamame_reference"
    with pytest.raises(ValueError, match="adamame_reference"):
        ScoringSettings(lcpr_rule="fasttext")
