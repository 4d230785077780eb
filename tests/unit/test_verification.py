"""Answer extraction and the verifier registry (components/verification.py), table-driven."""

from __future__ import annotations

import doctest
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

import components.verification as verification
from components.verification import (
    VERIFIERS,
    ThinkSplit,
    Verdict,
    choice_letter,
    extract_answer,
    get_verifier,
    split_think,
    verify,
)


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("<think>a\nb</think>\nR", ThinkSplit("a\nb", "R", True)),
        ("T</think>R", ThinkSplit("T", "R", True)),  # opening tag inside the prompt (Qwen3)
        ("<think>x</think>y</think>z", ThinkSplit("x</think>y", "z", True)),
        ("<think>never closed", ThinkSplit("<think>never closed", "<think>never closed", False)),
        ("plain", ThinkSplit("plain", "plain", False)),
    ],
)
def test_split_think(completion, expected):
    assert split_think(completion) == expected


EXTRACTIONS = [
    # (completion, lang, expected answer)
    ("So \\boxed{18}.", "en", "18"),
    ("\\boxed{1} then \\boxed{\\frac{\\sqrt{2}}{2}}", "en", "\\frac{\\sqrt{2}}{2}"),
    ("\\boxed{\\text{{18}} apples}", "en", "\\text{{18}} apples"),
    ("\\fbox{42}", "en", "42"),
    ("\\boxed 7", "en", "7"),
    ("<think>\\boxed{99}</think>The answer is 18.", "en", "18"),
    ("The answer is: **18**.", "en", "**18**"),  # emphasis is kept: normalization drops it
    ("**The answer is 18**", "en", "18"),
    ("**Final Answer:** 1,234.5", "en", "1,234.5"),
    ("Answer:\n\n42", "en", "42"),
    ("答えは１８個です。", "ja", "１８個"),
    ("よって、答えは **18** です", "ja", "**18**"),
    ("答え：3万円", "ja", "3万円"),
    ("答案是18。", "zh", "18"),
    ("所以答案为 18 元", "zh", "18 元"),
    ("答：十八", "zh", "十八"),
    ("La réponse est 1 234,5 €.", "fr", "1 234,5 €"),
    ("Réponse : 18", "fr", "18"),
    ("Die Antwort lautet 1.234,5.", "de", "1.234,5"),
    ("Antwort: 18", "de", "18"),
    ("คำตอบคือ 18 บาท", "th", "18 บาท"),
    ("La respuesta es 7.", "es", "7"),
    ("Ответ: 42", "ru", "42"),
    ("Jibu ni 12", "sw", "12"),
    ("ধাপে ধাপে উত্তর: 5 + 6 = 11। উত্তর হল 11।", "bn", "11"),
    ("దశలవారీగా సమాధానం: 5+6=11. సమాధానం 11.", "te", "11"),
    ("정답은 18입니다", "ko", "18"),
    ("Đáp án là 5", "vi", "5"),
    ("The answer is 3. La réponse est 4.", "fr", "4"),  # the last phrase wins, any language
    ("She has 3 bags of 6, so 18 in all", "en", "18"),  # last-number fallback
    ("合計は3万円になる", "ja", "3万"),
    ("十八", "zh", "十八"),  # short response is the answer
    ("", "en", None),
    ("I cannot tell without more information about the problem.", "en", None),
]


@pytest.mark.parametrize(("completion", "lang", "expected"), EXTRACTIONS)
def test_extract_answer(completion, lang, expected):
    assert extract_answer(completion, lang) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("C", "C"), ("(C)", "C"), ("**C.**", "C"), ("\\text{C}", "C"), ("Ｃ", "C"), ("C) 42", "C"),
     ("K", None), ("Cats", None), ("", None)],
)
def test_choice_letter(text, expected):
    assert choice_letter(text) == expected


VERDICTS = [
    # (verifier, answer, gold, lang, expected) with extract=False: the answer as a model wrote it
    ("exact", "18", "18", "en", True),
    ("exact", " 18 ", "18", "en", True),
    ("exact", "**18**", "18", "en", False),
    ("exact", "１８", "18", "ja", False),
    ("numeric", "１８", "18", "ja", True),
    ("numeric", "3万", "30000", "ja", True),
    ("numeric", "2,5", "2.5", "fr", True),
    ("numeric", "2,125", "2,125", "de", True),  # an integer gold: three-digit groups in every language
    ("numeric", "2,125", "2.125", "de", True),  # a non-integer gold: German reads the decimal comma
    ("numeric", "2.125", "2,125", "de", True),
    ("numeric", "\\frac{1}{2}", "$\\frac{1}{2}$", "en", True),
    ("numeric", "2^{10}", "1024", "en", False),
    # the measured math-verify 0.9 traps
    ("math_verify", "１８", "18", "ja", False),
    ("math_verify", "3万", "30000", "ja", False),
    ("math_verify", "答えは18です", "18", "ja", False),
    ("math_verify", "18元", "18", "zh", True),
    ("math_verify", "2^{10}", "1024", "en", True),
    ("trusted", "１８", "18", "ja", True),
    ("trusted", "3万", "30000", "ja", True),
    ("trusted", "答えは18です", "18", "ja", True),
    ("trusted", "3千", "30000", "ja", False),
    ("trusted", "2^{10}", "1024", "en", True),
    ("trusted", "\\sqrt{8}", "$2\\sqrt{2}$", "en", True),
    ("trusted", "\\frac{\\sqrt{6}}{4}", "$\\frac{\\sqrt{6}}{4}$", "en", True),
    ("trusted", "[-\\frac{1}{4},0)\\cup(0,2)", "$[-\\frac{1}{4}, 0) \\cup (0, 2)$", "en", True),
    ("trusted", "(-\\infty,-1)\\cup(6,\\infty)", "$(-\\infty,-1)\\cup(6,+\\infty)$", "en", True),
    ("trusted", "[-\\frac{1}{4},0]", "$[-\\frac{1}{4}, 0) \\cup (0, 2)$", "en", False),
    ("trusted", "(C)", "C", "en", True),
    ("trusted", "La réponse est (C).", "C", "fr", True),
    ("trusted", "答案是 D", "C", "zh", False),
    ("hybrid", "3万", "30000", "ja", True),
    ("hybrid", "2^{10}", "1024", "en", True),
    ("hybrid", "19", "18", "en", False),
]


@pytest.mark.parametrize(("name", "answer", "gold", "lang", "expected"), VERDICTS)
def test_verdicts_on_answers(name, answer, gold, lang, expected):
    assert verify(name, answer, gold, lang, extract=False).correct is expected


@pytest.mark.parametrize(
    ("name", "completion", "gold", "lang", "expected"),
    [
        ("exact", "<think>x</think>The answer is 18.", "18", "en", True),
        ("exact", "<think>x</think>答えは１８です。", "18", "ja", False),
        ("trusted", "<think>x</think>答えは１８です。", "18", "ja", True),
        ("trusted", "<think>…</think>\\boxed{3万}", "30000", "ja", True),
        ("trusted", "We get $x = \\frac{\\sqrt{6}}{4}$ here", "$\\frac{\\sqrt{6}}{4}$", "en", True),
        ("trusted", "The answer is (C) 42.", "C", "en", True),
        ("numeric", "<think>18</think>So 19 in total.", "18", "en", False),
        ("math_verify", "Therefore $\\boxed{\\frac{1}{2}}$", "0.5", "en", True),
    ],
)
def test_verdicts_on_completions(name, completion, gold, lang, expected):
    assert verify(name, completion, gold, lang).correct is expected


def test_verdict_forms():
    verdict = verify("trusted", "<think>…</think>答えは**３万**円です", "30000", "ja")
    assert verdict == Verdict(True, "**３万**円", "30000", "30000", "trusted", "phrase")


@pytest.mark.parametrize("name", sorted(VERIFIERS))
def test_registry_contract(name):
    verifier = VERIFIERS[name]()
    assert verifier.name == name
    assert get_verifier(name) is get_verifier(name)
    right = verifier("<think>t</think>\\boxed{18}", "18", "en")
    wrong = verifier("18", "19", "en", extract=False)
    empty = verifier("", "18", "ja")
    assert isinstance(right, Verdict) and right.verifier == name
    assert (right.correct, right.extracted) == (True, "18")
    assert (wrong.correct, wrong.extracted) == (False, "18")
    assert (empty.correct, empty.extracted) == (False, None)


def test_unknown_verifier_names_the_known_ones():
    with pytest.raises(ValueError, match="exact, hybrid, math_verify, numeric, trusted"):
        get_verifier("fuzzy")


def test_math_verify_paths_work_off_the_main_thread():
    cases = [(name, answer, gold, lang, expected) for name, answer, gold, lang, expected in VERDICTS
             if name in ("math_verify", "trusted", "hybrid")]
    threads = set()

    def judge(case):
        name, answer, gold, lang, _ = case
        threads.add(threading.current_thread() is threading.main_thread())
        return verify(name, answer, gold, lang, extract=False).correct

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(judge, cases))
    assert threads == {False}
    assert results == [case[-1] for case in cases]


def test_docstring_examples():
    assert doctest.testmod(verification).failed == 0
