"""Answer verification conformance: the classes where polyreason and Math-Verify-style verdicts differed.

Cases written by hand from the failure classes (ideas from Math-Verify's own test suite, with
numeric golds): numbers read inside LaTeX or inside words, exact comparison of
non-integers, an earlier boxed answer beating a later final-answer phrase, currency in boxed
answers, pairs and lists read as one number, and comma grouping decided by the language.
"""

from __future__ import annotations

import pytest

from components.audit.stress import build_variants, judge_variants, load_table, summarize
from components.extraction import extract
from components.numbers import parse_number
from components.verification import verify

# (case id, verifier, completion, gold, lang, expected verdict)
LATEX_AND_WORDS = [
    ("frac-not-its-denominator", "trusted", r"So the ratio is \frac{10}{9}", "9", "en", False),
    ("frac-value", "trusted", r"So the ratio is \frac{10}{9}", "10/9", "en", True),
    ("inline-frac-value", "trusted", r"Each gets $\frac{36}{2}$", "18", "en", True),
    ("sqrt-not-its-parts", "trusted", r"x = \frac{1+\sqrt5}{2}", "2", "en", False),
    ("inline-math-last", "numeric", r"She has 3 bags, in all $18$ apples", "18", "en", True),
    ("digit-inside-word", "trusted", "AZYUK2A", "2", "en", False),
    ("ordinal-is-not-the-answer", "trusted", "So 18 is the answer to the 3rd step", "18", "en", True),
    ("variable-glued", "numeric", "hence x2 and the total 18", "18", "en", True),
    ("unit-glued-is-fine", "trusted", "The rope is 18km", "18", "en", True),
    ("cjk-counter-glued", "trusted", "合計は18個", "18", "ja", True),
    ("dollar-amounts-are-not-math", "trusted", "It costs $5 and $6, so $11 in all", "11", "en", True),
    ("escaped-dollar", "trusted", r"The total is \$18", "18", "en", True),
]
PRECISION = [
    ("repeating-decimal", "trusted", "0.0833333333333333", "1/12", "en", True),
    ("too-short-decimal", "trusted", "0.08333", "1/12", "en", False),
    ("third", "numeric", "0.333333333", "1/3", "en", True),
    ("rounded-third", "numeric", "0.33", "1/3", "en", False),
    ("integers-exact", "trusted", "18.0000001", "18", "en", True),
    ("integers-differ", "trusted", "19", "18", "en", False),
    ("fraction-equals-decimal", "hybrid", r"\frac{1}{8}", "0.125", "en", True),
]
BOXED_AND_PHRASES = [
    ("later-phrase-wins", "trusted", r"First \boxed{255}. The final answer is $10,455$.", "10455", "en", True),
    ("later-boxed-wins", "trusted", r"The answer is 17. Checking again: \boxed{18}", "18", "en", True),
    ("boxed-inside-phrase", "trusted", r"The final answer is $\boxed{18}$.", "18", "en", True),
    ("commentary-after-boxed", "trusted", r"\boxed{18}. The answer is reasonable.", "18", "en", True),
    ("localized-phrase-after-boxed", "trusted", r"\boxed{17} 再検算すると、答えは18個です。", "18", "ja", True),
    ("boxed-money", "math_verify", r"\boxed{\$18}", "18", "en", True),
    ("boxed-money-trusted", "trusted", r"So she makes \boxed{\$18} a day", "18", "en", True),
    ("boxed-text-unit", "math_verify", r"\boxed{18 \text{ dollars}}", "18", "en", True),
    ("boxed-grouped", "math_verify", r"\boxed{10,455}", "10455", "en", True),
]
PAIRS_AND_LISTS = [
    ("pair-is-not-a-decimal", "trusted", "(0,9)", "0.9", "en", False),
    ("pair-is-not-a-decimal-mv", "math_verify", "(0,9)", "0.9", "en", False),
    ("pair-is-not-its-last", "numeric", "The point is (0, 9)", "9", "en", False),
    ("interval", "trusted", "[0,9)", "0.9", "fr", False),
    ("boxed-list-mv", "math_verify", r"\boxed{-2,1}", "-2.1", "en", False),
    ("boxed-list-is-a-set", "math_verify", r"\boxed{-2,1}", r"$\{-2, 1\}$", "en", True),
    ("semicolon-list", "numeric", "(1; 2)", "1.2", "fr", False),
    ("grouped-in-brackets", "trusted", "(1,234)", "1234", "en", True),
    ("french-decimal-in-brackets", "trusted", "(3,5)", "3.5", "fr", True),
    ("words-in-brackets-are-prose", "trusted", "Total 1,000 (we had 3, then 5)", "5", "en", True),
]
GROUPING = [
    ("fr-comma-group", "trusted", "La réponse est 1,000.", "1000", "fr", True),
    ("de-comma-group", "numeric", "2,125", "2125", "de", True),
    ("es-comma-group", "trusted", "La respuesta es 114,200", "114200", "es", True),
    ("en-dot-group", "trusted", "1.234", "1234", "en", True),
    ("de-dot-group", "trusted", "1.234", "1234", "de", True),
    ("decimal-gold-keeps-language", "trusted", "2,125", "2.125", "de", True),
    ("decimal-gold-en-reads-group", "trusted", "2,125", "2.125", "en", False),
    ("decimal-comma-everywhere", "trusted", "1,5", "1.5", "en", True),
    ("wrong-group", "trusted", "1,001", "1000", "fr", False),
    ("four-digit-tail-is-decimal", "trusted", "1,0000", "1", "fr", True),
]
SLASH_AND_SIGN = [
    ("slash-fraction-keeps-numerator", "trusted", "The probability that Alice wins is 2/3.", "2/3", "en", True),
    ("slash-fraction-is-not-its-denominator", "trusted", "The probability that Alice wins is 2/3.", "3", "en", False),
    ("spaced-dollars-slash-fraction", "trusted", "$ 1/3 $", "1/3", "en", True),
    ("signed-slash-fraction", "trusted", "so x = -1 / 4", "-0.25", "en", True),
    ("fr-slash-fraction", "trusted", "La probabilité vaut donc 2/3.", "2/3", "fr", True),
    ("th-digits-slash-fraction", "trusted", "ดังนั้นความน่าจะเป็นเท่ากับ ๒/๓", "2/3", "th", True),
    ("arabic-indic-slash-fraction", "trusted", "إذن الاحتمال يساوي ٢/٣", "2/3", "ar", True),
    ("date-is-not-a-fraction", "trusted", "Il en reste 12/25/2024", "2024", "fr", True),
    ("negative-latex-fraction", "trusted", r"So the slope is -\frac{10}{9}", "-10/9", "en", True),
    ("negative-latex-fraction-not-positive", "trusted", r"So the slope is -\frac{10}{9}", "10/9", "en", False),
    ("unicode-minus-latex-fraction", "trusted", "donc x = −\\frac{3}{4}", "-0.75", "fr", True),
    ("difference-is-not-a-sign", "trusted", r"First $\frac{1}{2}$, then 3-\frac{1}{2}", "-1/2", "en", False),
]
UNITS_AND_MATH = [
    ("grouped-decimal-then-unit", "trusted", "so it is not 10, it is 1,000.99m²", "1000.99", "en", True),
    ("de-grouped-decimal-then-unit", "trusted", "Die Fläche beträgt 1.000,5m²", "1000.5", "de", True),
    ("fr-decimal-comma-then-unit", "trusted", "La longueur totale est 2,5m²", "2.5", "fr", True),
    ("latex-unit-power", "trusted", r"The area is $15\text{ cm}^2$", "15", "en", True),
    ("superscript-is-a-power", "trusted", "2²", "2", "en", False),
    ("superscript-power-value", "trusted", "2²", "4", "en", True),
    ("grouped-number-in-math-after-phrase", "trusted",
     r"The answer is $16,\!386.20$. I apologize for the repetition.", "16386.20", "en", True),
    ("display-math-over-lines-after-phrase", "trusted", "The final answer is \\[\n18\n\\]", "18", "en", True),
    ("two-boxes-are-a-set", "trusted", r"$\boxed{1,2}$", r"$\boxed{1}\boxed{2}$", "en", True),
    # Math-Verify's tests reject inline math broken over lines; TeX reads the break as a space,
    # so the answer written is 9 and trusted accepts it on purpose.
    ("dollar-math-over-lines", "trusted", "Answer $ \n 9 \n $", "9", "en", True),
    ("paren-math-over-lines", "trusted", "Answer \\( \n 9 \n \\)", "9", "en", True),
]
CASES = (LATEX_AND_WORDS + PRECISION + BOXED_AND_PHRASES + PAIRS_AND_LISTS + GROUPING + SLASH_AND_SIGN
         + UNITS_AND_MATH)


@pytest.mark.parametrize("case,verifier,completion,gold,lang,expected", CASES, ids=[c[0] for c in CASES])
def test_verdict(case, verifier, completion, gold, lang, expected):
    assert verify(verifier, completion, gold, lang).correct is expected


# (completion, mode, expected answer, expected method)
EXTRACTION_MODES = [
    (r"<think>t</think>So \boxed{18}.", "strict", "18", "boxed"),
    (r"<think>t</think>So \boxed{18}.", "lenient", "18", "boxed"),
    (r"<think>\boxed{99}</think>The answer is 18.", "strict", None, "none"),
    (r"<think>\boxed{99}</think>The answer is 18.", "lenient", "18", "phrase"),
    (r"\boxed{18}", "strict", None, "none"),  # the think block never closed
    (r"\boxed{18}", "lenient", "18", "boxed"),
    ("<think>t</think>So 18 apples in all.", "strict", None, "none"),
    ("<think>t</think>So 18 apples in all.", "lenient", "18", "last_number"),
    ("<think>t</think>十八", "lenient", "十八", "short_response"),
    ("<think>t</think>I cannot tell without more information about this.", "lenient", None, "none"),
    (r"<think>t</think>\boxed{1} then \boxed{2}", "strict", "2", "boxed"),
    (r"<think>t</think>\fbox{7}", "strict", "7", "boxed"),
    ("It is 2/3.", "lenient", "2/3", "last_number"),
    ("x = -1 / 4", "lenient", "-1 / 4", "last_number"),
    ("(1/2) / (3/4)", "lenient", "3/4", "last_number"),
    ("x2/3", "lenient", "3", "last_number"),  # a numerator glued to a letter is not taken
    (r"so -\frac{10}{9}", "lenient", r"-\frac{10}{9}", "last_number"),
    (r"x-\frac{1}{2}", "lenient", r"\frac{1}{2}", "last_number"),
    ("so 10 which is 1,000.99m²", "lenient", "1,000.99", "last_number"),
    (r"The answer is $16,\!386.20$! Done.", "lenient", r"$16,\!386.20$", "phrase"),
    ("The answer is 18! Done.", "lenient", "18", "phrase"),
]


@pytest.mark.parametrize("completion,mode,answer,method", EXTRACTION_MODES)
def test_extraction_modes(completion, mode, answer, method):
    found = extract(completion, mode=mode)
    assert (found.answer, found.method) == (answer, method)


@pytest.mark.parametrize("mode,correct,method", [("lenient", True, "last_number"), ("strict", False, "none")])
def test_verdict_carries_the_method(mode, correct, method):
    verdict = verify("trusted", "<think>x</think>So 18 apples.", "18", "en", mode=mode)
    assert (verdict.correct, verdict.method) == (correct, method)
    assert verify("trusted", "18", "18", "en", extract=False).method == "given"


def test_strict_mode_reads_no_whole_response():
    # lenient: math-verify reads the whole response when nothing was extracted; strict never does
    text = r"<think>t</think>It is $\pi$"
    assert verify("math_verify", text, r"$\pi$", "en").correct is True
    assert verify("math_verify", text, r"$\pi$", "en", mode="strict").correct is False


def test_unknown_mode_is_named():
    with pytest.raises(ValueError, match="strict, lenient"):
        extract("x", mode="loose")


@pytest.mark.parametrize("text,lang,grouping,expected", [
    ("1,000", "fr", False, "1"), ("1,000", "fr", True, "1000"), ("1.000", "en", True, "1000"),
    ("1,000", "en", False, "1000"), ("0,500", "fr", True, "0.5"), ("12,5", "de", True, "12.5"),
])
def test_grouping_rule(text, lang, grouping, expected):
    from fractions import Fraction

    assert parse_number(text, lang, grouping=grouping) == Fraction(expected)


def test_reference_verifier_has_no_language_gap_when_only_the_format_differs():
    """Every language gets every number format of the stress table: trusted's FNR is equal (0)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from conformance_stress import format_only_table

    table = format_only_table(load_table())
    languages = list(table["languages"])
    variants = build_variants(["1234", "70000", "3.5", "-5"], languages, table)
    summary = summarize(judge_variants(variants, ["trusted"]), ["trusted"])["trusted"]
    assert set(summary) == set(languages)
    assert {values["accept_correct"] for values in summary.values()} == {1.0}
    assert {values["reject_wrong"] for values in summary.values()} == {1.0}
