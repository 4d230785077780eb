"""SLC(T, L) on hand-written traces, SLC&Acc, step splitting, top-1 language consistency."""

from __future__ import annotations

import pytest

from components.language import get_detector
from components.metrics.slc import language_consistency, slc, slc_and_acc, split_steps, step_units


@pytest.fixture(scope="module")
def detector():
    return get_detector()


FR_1 = "Calculons d'abord le nombre total de pommes dans le panier."
FR_2 = "Ensuite, nous retirons les pommes que Marie a mangées hier."
FR_3 = "Donc la réponse finale est dix-huit pommes."
EN_1 = "Wait, let me double-check the subtraction once more."

FOUR_STEPS_ONE_ENGLISH = f"{FR_1}\n\n$$\n24 - 6 = 18\n$$\n\n{FR_2}\n\n{EN_1}\n\n{FR_3}"


@pytest.mark.parametrize("trace,expected", [
    ("A.\n\nB.\n\nC.", ["A.", "B.", "C."]),
    ("A line\nsame step\n\n  \n\nnext", ["A line\nsame step", "next"]),
    ("one\ntwo\nthree", ["one", "two", "three"]),   # a single paragraph falls back to lines
    ("\n\n  only  \n", ["only"]),
    ("", []),
])
def test_split_steps(trace, expected):
    assert split_steps(trace) == expected


def test_math_only_steps_bear_no_language():
    assert step_units(FOUR_STEPS_ONE_ENGLISH) == [FR_1, FR_2, EN_1, FR_3]


@pytest.mark.parametrize("case,lang,trace,expected", [
    ("4 steps, 1 English", "fr", FOUR_STEPS_ONE_ENGLISH, 0.75),
    ("4 steps, all French", "fr",
     f"{FR_1}\n\n{FR_2}\n\n$x = 3$\n\n{FR_3}\n\nDonc voilà, c'est terminé pour aujourd'hui.", 1.0),
    ("4 steps, asked in English", "en", FOUR_STEPS_ONE_ENGLISH, 0.25),
    ("mixed multi-line step detected whole", "fr", f"{FR_1}\n{FR_2}\nOK.\n\n{FR_3}", 1.0),
    ("single paragraph by lines", "ja", "まず卵の数を数えます。\nSo we subtract.\n答えは十八個です。", 2 / 3),
    ("no language-bearing step", "fr", "$$x=1$$\n\n3 + 4 = 7", None),
    ("empty", "fr", "", None),
])
def test_slc(detector, case, lang, trace, expected):
    value = slc(trace, lang, detector)
    assert value == (pytest.approx(expected) if expected is not None else None)


@pytest.mark.parametrize("correct,value,threshold,expected", [
    (True, 0.95, 0.9, True), (True, 0.9, 0.9, True), (True, 0.75, 0.9, False),
    (False, 1.0, 0.9, False), (True, None, 0.9, False), (True, 0.75, 0.7, True),
])
def test_slc_and_acc(correct, value, threshold, expected):
    assert slc_and_acc(correct, value, threshold) is expected


@pytest.mark.parametrize("lang,trace,expected", [
    ("fr", FOUR_STEPS_ONE_ENGLISH, True),   # dominant language French despite an English step
    ("en", FOUR_STEPS_ONE_ENGLISH, False),
    ("pt", "Primeiro, vamos calcular quantos ovos sobram por dia.\n\nPortanto, ela vende nove ovos.", True),
    ("fr", "12 + 3 = 15", None),
])
def test_language_consistency(detector, lang, trace, expected):
    assert language_consistency(trace, lang, detector) is expected
