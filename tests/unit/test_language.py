"""components.language: cleaning before detection, the cached detector, golden detections."""

from __future__ import annotations

import pytest

from components.language import (
    BASE_LANGUAGES,
    MIN_CONFIDENCE,
    MemoDetector,
    clean_for_detection,
    clean_paragraphs,
    detect_block,
    get_detector,
    has_letters,
    is_supported,
    scripts_of,
    split_paragraphs,
    uses_latin_script,
)


@pytest.fixture(scope="module")
def detector():
    return get_detector()


CLEANING = [
    ("plain words stay", "Donc la réponse est dix.", "Donc la réponse est dix."),
    ("digits go", "Il reste 9 œufs et 1,5 litre.", "Il reste œufs et , litre."),
    ("numeric signs go", "x² vaut ½ ou ③", "x vaut ou"),
    ("inline dollar math", "On a $x^2 + y = 10$ ici.", "On a ici."),
    ("currency dollars stay text", "It costs $5 and $6 each.", "It costs $ and $ each."),
    ("display dollar math", "Avant\n$$\n\\frac{a}{b}\n$$\nAprès", "Avant\n\nAprès"),
    ("bracket math", "Soit \\[ a + b \\] et \\( c \\) fin", "Soit et fin"),
    ("nested boxed", "Réponse : \\boxed{\\frac{1}{\\sqrt{2}}} fin", "Réponse : fin"),
    ("bare latex commands", "Alors \\text{pommes} et \\times", "Alors pommes et"),
    ("arithmetic with variables", "So x + y = 10 and 2x = 4.", "So and ."),
    ("geometry labels", "Donc AB = 5 cm.", "Donc cm."),
    ("greek symbol in expression", "Soit α = 30 degrés.", "Soit degrés."),
    ("code fence and inline code", "Voir ```python\nprint(1)\n``` et `x = 1` ici", "Voir et ici"),
    ("urls", "Voir https://example.com/a?b=1 et www.site.org.", "Voir et"),
    ("think tags", "<think>Bonjour</think>", "Bonjour"),
    ("full-width digits", "答えは１８個です。", "答えは 個です。"),
]


@pytest.mark.parametrize("name,text,expected", CLEANING, ids=[c[0] for c in CLEANING])
def test_clean_for_detection(name, text, expected):
    assert clean_for_detection(text) == expected


def test_cleaning_keeps_line_structure():
    text = "ligne un\n$$\nx = 1\n$$\nligne deux"
    assert clean_for_detection(text).split("\n") == ["ligne un", "", "ligne deux"]


@pytest.mark.parametrize("text,expected", [
    ("", False), ("12 + 3 = 15", False), ("(７) - ½", False), ("x", True), ("答", True), ("ก", True),
])
def test_has_letters(text, expected):
    assert has_letters(text) is expected


def test_paragraphs():
    assert split_paragraphs("a\nb\n  \n\nc\n\n") == ["a\nb", "c"]
    assert clean_paragraphs("Un 1.\n\n$$x=2$$\n\nDeux") == ["Un .", "", "Deux"]


@pytest.mark.parametrize("lang,latin,scripts", [
    ("pt", True, ("latin",)), ("sw", True, ("latin",)), ("ja", False, ("han", "kana")),
    ("ko", False, ("hangul",)), ("ru", False, ("cyrillic",)), ("th", False, ("thai",)),
])
def test_scripts(lang, latin, scripts):
    assert uses_latin_script(lang) is latin
    assert scripts_of(lang) == scripts


def test_is_supported():
    assert is_supported("pt") and is_supported("te") and is_supported("ca")
    assert not is_supported("xx") and not is_supported("PT") and not is_supported("por")


def test_detector_is_cached_per_language_set(detector):
    assert get_detector() is detector
    assert get_detector(["pt", "ja"]) is detector  # already in BASE_LANGUAGES
    assert detector.languages == BASE_LANGUAGES
    with_catalan = get_detector(["ca"])
    assert with_catalan is not detector and with_catalan.languages == BASE_LANGUAGES | {"ca"}
    assert get_detector({"ca"}) is with_catalan


def test_unknown_code_is_named():
    with pytest.raises(ValueError, match="'xx'"):
        get_detector(["pt", "xx"])


GOLDEN = [
    ("en", "Let me compute the total number of apples first."),
    ("fr", "Calculons d'abord le nombre total de pommes."),
    ("pt", "Primeiro, vamos calcular quantos ovos sobram por dia."),
    ("pt", "Então precisamos do número total de maçãs."),
    ("pt", "Portanto, a resposta final é dezoito."),
    ("es", "Primero, calculemos cuántos huevos quedan cada día."),
    ("de", "Zuerst berechnen wir, wie viele Eier übrig bleiben."),
    ("sw", "Kwanza, tunahesabu idadi ya mayai yaliyobaki kila siku."),
    ("ja", "まず、毎日残る卵の数を計算します。"),
    ("zh", "首先，我们计算每天剩下的鸡蛋数量。"),
    ("ko", "먼저 매일 남는 달걀의 수를 계산합니다."),
    ("th", "ก่อนอื่น เราคำนวณจำนวนไข่ที่เหลือในแต่ละวัน"),
    ("ru", "Сначала вычислим, сколько яиц остаётся каждый день."),
    ("bn", "প্রথমে, আমরা প্রতিদিন কতটি ডিম অবশিষ্ট থাকে তা গণনা করি।"),
    ("te", "మొదట, ప్రతిరోజూ ఎన్ని గుడ్లు మిగులుతాయో లెక్కిద్దాం."),
]


@pytest.mark.parametrize("lang,text", GOLDEN, ids=[f"{g[0]}-{i}" for i, g in enumerate(GOLDEN)])
def test_golden_detection(detector, lang, text):
    assert detector.detect(text) == lang


def test_portuguese_is_not_read_as_spanish_or_catalan(detector):
    portuguese = [text for lang, text in GOLDEN if lang == "pt"]
    assert detector.detect_many(portuguese) == ["pt"] * 3
    assert get_detector(["ca"]).detect_many(portuguese) == ["pt"] * 3


def test_math_does_not_pull_toward_english(detector):
    assert detector.detect("Donc $x = \\frac{a}{b}$ et 3 × 4 = 12 pommes vertes.") == "fr"
    assert detector.detect("$$x + y = 10$$") is None
    assert detector.detect("") is None


def test_detect_many_matches_detect(detector):
    texts = [text for _, text in GOLDEN] + ["", "12 = 12"]
    assert detector.detect_many(texts) == [detector.detect(text) for text in texts]


def test_memo_detector_detects_each_text_once(detector):
    calls = []

    class Counting:
        languages = detector.languages

        def read(self, text, *, clean=True):
            calls.append(text)
            return detector.read(text, clean=clean)

        def read_many(self, texts, *, clean=True):
            calls.extend(texts)
            return detector.read_many(texts, clean=clean)

    memo = MemoDetector(Counting())
    memo.prefetch(["Bonjour à tous.", "Bonjour à tous.", "Hello there my friend."], clean=False)
    assert memo.detect("Bonjour à tous.", clean=False) == "fr"
    assert memo.detect("Hello there my friend.", clean=False) == "en"
    assert calls == ["Bonjour à tous.", "Hello there my friend."]


@pytest.mark.parametrize("text,expected", [
    ("Calculons le total des pommes.\nEnsuite nous divisons par deux.", "fr"),
    ("Calculons le total des pommes et des poires.\nLet me check.", "fr"),
    ("", None),
])
def test_detect_block(detector, text, expected):
    assert detect_block(detector, text) == expected


def test_a_text_holding_kana_is_japanese_on_every_call():
    # mixed-script noise (a random-weight model's sample) where Han and kana words tie: lingua alone answers
    # Chinese or Japanese by hash-map order, call by call; its kana rule says Japanese
    noise = "by\ufffd\u0e44\ufffd個を市\ufffdKll\ufffd"
    detector = get_detector(["en"])
    assert {detector.detect(noise, clean=False) for _ in range(30)} == {"ja"}
    assert set(detector.detect_many([noise] * 30, clean=False)) == {"ja"}
    assert detector.detect("我有十六个鸡蛋。", clean=False) == "zh"  # Han without kana stays Chinese


def test_a_line_of_several_scripts_gets_one_answer_on_every_call():
    # Han, kana and Thai letters tie in lingua's rules: alone it answers Thai or Japanese call by call
    noise = "场\ufffd\ufffdジ\ufffd ืื"
    detector = get_detector(["en", "fr"])
    answers = {detector.detect(noise, clean=False) for _ in range(20)}
    assert len(answers) == 1 and answers == set(detector.detect_many([noise] * 20, clean=False))
    assert answers <= {"ja", "th"}


def test_a_reading_is_lingua_s_own_answer_and_margin(detector):
    # lingua's detect_language_of is the oracle for the top language; its confidence values for the margin
    codes = detector._to_code
    texts = [text for _, text in GOLDEN] + ["Total: .", "So,", "Il en mange .", "Wait, let me check.", "答え"]
    for text, found in zip(texts, detector.read_many(texts)):
        lingua_top = detector._detector.detect_language_of(text)
        assert found.language == (codes[lingua_top] if lingua_top else None), text
        values = detector._detector.compute_language_confidence_values(text)
        assert found.margin == pytest.approx(values[0].value - values[1].value), text
        for value in values:  # the confidences kept (below MIN_CONFIDENCE: 0)
            kept = value.value if value.value >= MIN_CONFIDENCE else 0.0
            assert found.confidence(codes[value.language]) == pytest.approx(kept), text


def test_a_line_of_two_scripts_is_read_by_the_one_with_more_characters():
    detector = get_detector(["en"])
    # five Thai characters against two Han: read as Thai whatever the order; lingua alone answered by hash order
    assert {detector.detect(text, clean=False) for text in ("文字 ขอบคุณครับ", "ขอบคุณครับ 文字")} == {"th"}
    assert detector.read("文字 ขอบคุณครับ", clean=False) == detector.read("ขอบคุณครับ", clean=False)
