"""LCPR's line level on reasoning traces: a line is judged only where its residue can decide its language.

The verdict rules are held on hand-made readings (no detector); the long traces are written here the way a
reasoning model writes them (label lines, ``So,`` openers, LaTeX, a list) and judged by the real detector.
"""

from __future__ import annotations

import pytest

from components.language import Reading, get_detector
from components.metrics.lcpr import get_rule, judge_trace
from components.metrics.lcpr_lines import (
    FAIL,
    PASS,
    UNDECIDED,
    judge_line,
    line_level,
    residue_size,
)
from components.scoring import score_rows
from components.settings import ScoringSettings


@pytest.fixture(scope="module")
def detector():
    return get_detector()


@pytest.mark.parametrize("residue,size", [
    ("Total: .", (1, 0)),
    ("So, Total distance =", (3, 0)),
    ("Janet's ducks lay eggs", (4, 0)),        # the "s" after the apostrophe is a single letter: no word
    ("AB = cm, x", (0, 0)),                     # a label, a unit, a variable
    ("所以总数是", (0, 5)),
    ("答えは 個です。", (0, 6)),
    ("ดังนั้น", (0, 7)),                        # Thai counts its characters, vowel signs included
    ("Total 合計", (1, 2)),
])
def test_residue_size(residue, size):
    assert residue_size(residue) == size


def reading(*confidences: tuple[str, float]) -> Reading:
    ranked = sorted(confidences, key=lambda pair: -pair[1])
    runner_up = ranked[1][1] if len(ranked) > 1 else 0.0
    return Reading(ranked[0][0], ranked[0][1] - runner_up, tuple(ranked))


@pytest.mark.parametrize("text,found,verdict", [
    ("Calculons le total des pommes.", reading(("fr", 0.8), ("es", 0.1)), PASS),
    ("Let me check the total again.", reading(("en", 0.7), ("de", 0.2), ("fr", 0.05)), FAIL),
    ("Total: .", reading(("es", 0.9), ("fr", 0.05)), UNDECIDED),                  # one word: too short to decide
    ("Il en reste donc.", reading(("fr", 0.45), ("es", 0.3)), UNDECIDED),          # own language, 0.15 ahead
    ("Il en mange trois.", reading(("de", 0.41), ("fr", 0.22), ("en", 0.13)), UNDECIDED),  # 0.19 over French
    # the runner-up is German, 0.1 behind, but French is 0.45 behind: clearly not French
    ("Each rose bush has roses.", reading(("en", 0.5), ("de", 0.4), ("fr", 0.05)), FAIL),
    ("所以总数是", reading(("zh", 1.0)), FAIL),                                     # five characters decide
    ("总数", reading(("zh", 1.0)), UNDECIDED),
])
def test_judge_line_in_a_french_trace(text, found, verdict):
    assert judge_line(text, "fr", found).verdict == verdict


@pytest.mark.parametrize("verdicts,level", [
    ([], None), ([UNDECIDED, UNDECIDED], None), ([PASS, UNDECIDED], True), ([PASS, FAIL, UNDECIDED], False),
])
def test_line_level(verdicts, level):
    judged = [judge_line("x", "fr", Reading(None, 0.0))._replace(verdict=v) for v in verdicts]
    assert line_level(judged) is level


ENGLISH_STEP = [
    "Janet's ducks lay 16 eggs per day.", "Step {k}:", "Total: 16 - 3 = 13.", "So, 13 x 2 = 26.", "Wait,",
    "- Janet: 16 eggs", "$$\n13 \\times 2 = 26\n$$", "She sells the remaining eggs at the market every day.",
    "Remaining = 16 - 3 - 4 = 9", "**Answer: 18**",
]
SPANISH_STEP = [
    "Los patos de Janet ponen 16 huevos por día.", "Paso {k}:", "Total: 16 - 3 = 13.", "Entonces, 13 x 2 = 26.",
    "Espera,", "- Janet: 16 huevos", "$$\n13 \\times 2 = 26\n$$", "Vende los huevos que sobran en el mercado cada día.",
    "Restante = 16 - 3 - 4 = 9", "**Respuesta: 18**",
]
ENGLISH_SENTENCE = "Wait, let me double-check how many eggs she sells at the market."


def trace(step: list[str], steps: int = 6, inserted: str | None = None) -> str:
    lines = [line.format(k=k) for k in range(1, steps + 1) for line in step]
    if inserted:
        lines.insert(31, inserted)
    return "<think>\n" + "\n".join(lines) + "\n</think>\n\n\\boxed{18}"


def test_a_label_heavy_english_trace_passes(detector):
    completion = trace(ENGLISH_STEP)
    assert completion.count("\n") >= 60
    verdict = judge_trace(completion, "en", detector, "adamame")
    assert verdict["line_pass"] is True
    # upstream's rule judges every fragment the labels leave ("Total: ." read as Spanish, ...): it fails
    upstream = get_rule("adamame_reference")
    units = upstream.line_units(upstream.trace(completion))
    failing = [v.text for v in upstream.judge_lines(units, "en", detector) if v.verdict == FAIL]
    assert not upstream.line_pass(units, "en", detector) and all(residue_size(t)[0] <= 2 for t in failing)


def test_a_spanish_trace_with_one_english_sentence_fails_and_names_it():
    rows = [{"id": "q", "lang": "es", "gold": "18", "completion": completion}
            for completion in (trace(SPANISH_STEP), trace(SPANISH_STEP, inserted=ENGLISH_SENTENCE))]
    clean, switched = score_rows(rows, ScoringSettings(verifier="exact"))["rows"]
    assert rows[1]["completion"].count("\n") >= 60
    assert clean["line_pass"] is True and clean["failed_lines"] is None
    assert switched["line_pass"] is False
    assert switched["failed_lines"] == [{"line": ENGLISH_SENTENCE, "detected": "en"}]


def test_a_trace_of_fragments_has_no_line_level(detector):
    fragments = "<think>\nTotal: 5 + 3 = 8\nSo,\nStep 2:\nWait, 8 - 2 = 6?\n</think>\\boxed{6}"
    assert judge_trace(fragments, "es", detector, "adamame")["line_pass"] is None
    assert judge_trace(fragments, "es", detector, "adamame_reference")["line_pass"] is False


def test_lcb_counts_its_five_tokens_on_the_residue(detector):
    line = "So, Total distance = 5 + 3 = 8"          # five tokens as written; lingua would read three words
    corrected, upstream = get_rule("lcb"), get_rule("lcb_reference")
    (verdict,) = corrected.judge_lines(corrected.line_units(line, "en"), "en", detector)
    assert (verdict.verdict, verdict.reason) == (UNDECIDED, "short: 3 tokens < 5")
    assert upstream.line_units(line, "en") == ["So Total distance  5  3  8"]   # kept: upstream counts six
