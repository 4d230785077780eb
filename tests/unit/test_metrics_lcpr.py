"""LCPR line and word level (AdaMame C.3 rule and the LCB variant) on hand-written traces."""

from __future__ import annotations

import pytest

from components.language import get_detector
from components.metrics.lcpr import (
    foreign_words,
    lcpr_from_rates,
    line_pass,
    line_units,
    load_english_words,
    word_pass,
)


@pytest.fixture(scope="module")
def detector():
    return get_detector()


@pytest.fixture(scope="module")
def words(shared_data):
    return load_english_words(shared_data / "language_confusion" / "words")


PT_START = "Primeiro, vamos calcular quantos ovos sobram por dia."
PT_END = "Portanto, ela vende nove ovos no mercado."


def lines(*parts: str) -> str:
    return "\n".join(parts)


# (case id, query language, trace, line pass, word pass) under rule "adamame"
ADAMAME = [
    ("pt-clean", "pt",
     lines(PT_START, "Ela come três ovos e usa quatro para fazer bolos.", "", "$16 - 3 - 4 = 9$", "", PT_END),
     True, True),
    ("pt-english-line", "pt", lines(PT_START, "Wait, let me double-check this calculation.", PT_END), False, True),
    ("pt-spanish-line", "pt",
     lines(PT_START, "Entonces, necesitamos calcular el número total de huevos.", PT_END), False, True),
    ("fr-han-word", "fr",
     lines("Calculons d'abord le prix total des pommes.", "Donc la réponse est 答案 dix-huit euros."), True, False),
    ("fr-latex", "fr",
     lines("Calculons $\\frac{16}{2}$ d'abord, c'est la moitié du total.", "\\[", "x = 3 \\cdot y", "\\]",
           "Donc la réponse finale est \\boxed{8}."), True, True),
    ("ja-clean-units-vars", "ja",
     lines("まず、残りの卵の数を計算します。", "長さは 5 cm で、x = 3 とします。", "", "したがって、答えは18です。"),
     True, True),
    ("ja-english-word", "ja",
     lines("まず、Let's 残りの卵の数を計算します。", "したがって、答えは18です。"), True, False),
    ("ja-greek-word", "ja", lines("まず、αριθμός を計算します。", "したがって、答えは18です。"), True, False),
    ("ja-greek-symbol", "ja", lines("角θの大きさを求めます。", "したがって、答えは18です。"), True, True),
    ("zh-english-line", "zh",
     lines("首先，我们计算鸡蛋的总数。", "So the total is eighteen eggs.", "所以答案是18。"), False, False),
    ("zh-english-word", "zh",
     lines("首先，我们用total来表示鸡蛋的总数。", "所以答案是18。"), True, False),
    ("ko-geometry-label", "ko", lines("선분 AB의 길이는 5 cm입니다.", "따라서 답은 18입니다."), True, True),
    ("ko-english-line", "ko",
     lines("먼저 남은 달걀의 수를 계산합니다.", "Let me verify this step again.", "따라서 답은 18입니다."),
     False, False),
    ("th-clean", "th",
     lines("ก่อนอื่น เราคำนวณจำนวนไข่ที่เหลือในแต่ละวัน", "ดังนั้นคำตอบคือ 18"), True, True),
    ("th-english-line", "th",
     lines("ก่อนอื่น เราคำนวณจำนวนไข่ที่เหลือในแต่ละวัน", "So the answer is eighteen dollars.", "ดังนั้นคำตอบคือ 18"),
     False, False),
    ("ru-english-word", "ru",
     lines("Сначала вычислим, сколько яиц остаётся каждый день.", "Итак, total равно восемнадцати."), True, False),
    ("ru-clean", "ru",
     lines("Сначала вычислим, сколько яиц остаётся каждый день.", "Значит, она зарабатывает 18 долларов в день."),
     True, True),
    ("en-han-word", "en",
     lines("First, compute the remaining eggs per day.", "So the answer is 十八 dollars."), True, False),
    ("de-clean", "de",
     lines("Zuerst berechnen wir, wie viele Eier übrig bleiben.", "Also verdient sie jeden Tag achtzehn Dollar."),
     True, True),
    ("es-clean", "es",
     lines("Primero, calculemos cuántos huevos quedan cada día.", "Por lo tanto, la respuesta es dieciocho dólares."),
     True, True),
    ("sw-clean", "sw",
     lines("Kwanza, tunahesabu idadi ya mayai yaliyobaki kila siku.", "Kwa hiyo anapata dola kumi na nane kwa siku."),
     True, True),
    ("bn-english-line", "bn",
     lines("প্রথমে, আমরা প্রতিদিন কতটি ডিম অবশিষ্ট থাকে তা গণনা করি।", "So the final answer is eighteen."),
     False, False),
    ("te-clean", "te",
     lines("మొదట, ప్రతిరోజూ ఎన్ని గుడ్లు మిగులుతాయో లెక్కిద్దాం.", "కాబట్టి సమాధానం పద్దెనిమిది."), True, True),
    ("empty", "fr", "", None, None),
    ("math-only", "fr", "$$x = 5$$\n\n12 + 3 = 15", None, None),
]


@pytest.mark.parametrize("case,lang,trace,line,word", ADAMAME, ids=[c[0] for c in ADAMAME])
def test_adamame_rule(detector, case, lang, trace, line, word):
    assert line_pass(trace, lang, detector, "adamame") is line
    assert word_pass(trace, lang, detector, "adamame") is word


@pytest.mark.parametrize("text,lang,expected", [
    ("まずStepでxとcmを計算ABC", "ja", ["Step"]),
    ("Donc 答え est π.", "fr", ["答え"]),
    ("Der Winkel θ und αβ", "de", ["αβ"]),
    ("Ответ: так, KM и km", "ru", []),           # ≤3 capitals (a label) and units pass
    ("Ответ: так, Kilo", "ru", ["Kilo"]),
    ("합계는 ＡＢ입니다 그리고 ok", "ko", ["ok"]),  # full-width capitals are a label; "ok" is a word
    ("Soit x² ≈ ½", "fr", []),                  # numeric signs are not letters
])
def test_foreign_words(text, lang, expected):
    assert foreign_words(text, lang) == expected


def test_line_units_ignore_letterless_lines():
    assert line_units("Un.\n\n42\n$x$\nDeux.") == ["Un.", "Deux."]


def test_lcb_word_list_filter(words):
    assert len(words) == 81_995
    assert "apple" in words and "total" in words
    assert "the" not in words            # 3 letters
    assert "Aachen" not in words         # not lower case


LONG_JA = "まず 残り の 卵 の 数 を 計算 します"
LCB = [
    # (case id, lang, trace, line, word)
    ("ja-english-word", "ja", f"{LONG_JA}\n次に total の 卵 を 数え ます", True, False),
    ("ja-clean", "ja", f"{LONG_JA}\n次に 全部 の 卵 を 数え ます", True, True),
    # the word level is judged on every trace; WPR only counts traces that pass the line level
    ("ja-english-line", "ja", f"{LONG_JA}\nLet me count all the eggs again now.", False, False),
    ("ru-short-english-dropped", "ru", "Сначала вычислим, сколько яиц остаётся каждый день.\nOK, total.", True, True),
    ("pt-latin-no-word-level", "pt", f"{PT_START}\n{PT_END}", True, None),
    ("all-lines-short", "fr", "Oui.\nDonc dix.", None, None),
    ("cut-at-next-question", "ja", f"{LONG_JA}\nQ: What is the total number of eggs today?", True, True),
]


@pytest.mark.parametrize("case,lang,trace,line,word", LCB, ids=[c[0] for c in LCB])
def test_lcb_rule(detector, words, case, lang, trace, line, word):
    assert line_pass(trace, lang, detector, "lcb", words) is line
    assert word_pass(trace, lang, detector, "lcb", words) is word


def test_lcb_needs_word_list(detector):
    with pytest.raises(ValueError, match="word list"):
        word_pass("まず 残り の 卵 の 数 を 計算 します", "ja", detector, "lcb")


def test_unknown_rule(detector):
    with pytest.raises(ValueError, match="adamame"):
        line_pass("text", "en", detector, "fasttext")


@pytest.mark.parametrize("lpr,wpr,expected", [
    (1.0, 1.0, 1.0), (1.0, 0.5, 2 / 3), (0.8, 0.6, 2 * 0.48 / 1.4), (0.0, 1.0, 0.0), (0.0, 0.0, 0.0),
])
def test_lcpr_is_harmonic_mean(lpr, wpr, expected):
    assert lcpr_from_rates(lpr, wpr) == pytest.approx(expected)
