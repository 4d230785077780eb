"""Teacher-trace filter (format, language, correctness), retention per language and reason, cap."""

from __future__ import annotations

import pytest

from components.data.traces import canonical_completion, cap_per_language, filter_traces, retention, trace_reasons, user_prompts
from components.settings import PromptSettings
from components.language import get_detector
from components.verification import get_verifier

FR_OK = ("<think>\nJulia a joué avec 18 enfants le lundi et 10 enfants le mardi.\n"
         "Donc la différence est de 18 - 10 = 8 enfants.\n</think>\n\nLa réponse est \\boxed{8}.")
FR_WRONG = FR_OK.replace("\\boxed{8}", "\\boxed{9}")
EN_TRACE = ("<think>\nJulia played with 18 kids on Monday and 10 kids on Tuesday.\n"
            "So the difference is 18 - 10 = 8 kids.\n</think>\n\nLa réponse est \\boxed{8}.")
NO_THINK = "Julia a joué avec 18 enfants. La différence est de 8. \\boxed{8}"
NO_BOX = FR_OK.replace("\\boxed{8}", "8")


@pytest.fixture(scope="module")
def detector():
    return get_detector(["fr", "ja"])


@pytest.mark.parametrize(("text", "reasons"), [
    (FR_OK, []),
    (FR_WRONG, ["incorrect"]),
    (EN_TRACE, ["language"]),
    (NO_THINK, ["format"]),
    (NO_BOX, ["format"]),
    ("<think>\n\n</think>\n\\boxed{9}", ["format", "language", "incorrect"]),
])
def test_trace_reasons(detector, text, reasons):
    assert trace_reasons(text, "fr", "8.0", detector, get_verifier("trusted")) == reasons


def test_filter_traces_and_retention(detector):
    rows = [{"id": str(i), "lang": "fr", "question": "q", "gold": "8.0"} for i in range(4)]
    kept, rejected = filter_traces(rows, [FR_OK, FR_WRONG, EN_TRACE, FR_OK], detector, get_verifier("trusted"))
    assert [r["id"] for r in kept] == ["0", "3"] and [r["reason"] for r in rejected] == ["incorrect", "language"]
    assert kept[0]["completion"].startswith("<think>\nJulia") and kept[0]["teacher_output"] == FR_OK
    report = retention(kept, rejected, ["fr", "ja"])
    assert report["fr"] == {"total": 4.0, "kept": 2.0, "rate": 0.5, "reason_format": 0.0,
                            "reason_language": 1.0, "reason_incorrect": 1.0}
    assert report["ja"]["total"] == 0.0 and report["ja"]["rate"] == 0.0
    assert report["overall"]["kept"] == 2.0


def test_canonical_completion_and_prompts():
    assert canonical_completion("<think>a</think>b \\boxed{1}") == "<think>\na\n</think>\n\nb \\boxed{1}"
    prompt = user_prompts([{"id": "1", "lang": "fr", "question": "Combien ?", "gold": "1"}], PromptSettings())[0]
    assert prompt.startswith("Combien ?\n") and "en français" in prompt and "\\boxed{}" in prompt


def test_cap_per_language_is_seeded():
    rows = [{"lang": "fr", "i": i} for i in range(10)] + [{"lang": "ja", "i": i} for i in range(3)]
    capped = cap_per_language(rows, 4, seed=1)
    assert sum(r["lang"] == "fr" for r in capped) == 4 and sum(r["lang"] == "ja" for r in capped) == 3
    assert capped == cap_per_language(rows, 4, seed=1) and cap_per_language(rows, None, 0) == rows


MIXED = ("<think>\nJulia a joué avec 18 enfants le lundi et 10 enfants le mardi.\n"
         "So the difference between the two days is 18 - 10 = 8 kids.\n"
         "Donc elle a joué avec huit enfants de plus le lundi.\n</think>\n\nLa réponse est \\boxed{8}.")


@pytest.mark.parametrize(("text", "language_filter", "min_slc", "reasons"), [
    (MIXED, "lcpr", None, ["language"]),        # AdaMame: entirely in the query language
    (MIXED, "slc", 0.6, []),                    # 2 of 3 steps in French: a code-switched cold-start trace stays
    (MIXED, "slc", 0.7, ["language"]),
    (EN_TRACE, "slc", 0.1, ["language"]),       # no French step at all
    (EN_TRACE, "none", None, []),
    (FR_WRONG, "none", None, ["incorrect"]),    # the other checks still apply
])
def test_language_filter_keeps_code_switched_traces_when_asked(detector, text, language_filter, min_slc, reasons):
    found = trace_reasons(text, "fr", "8", detector, get_verifier("trusted"), language_filter=language_filter,
                          min_slc=min_slc)
    assert found == reasons


def test_min_slc_goes_with_the_slc_filter():
    from components.settings import TraceSettings

    with pytest.raises(ValueError, match="min_slc is given exactly when language_filter is slc"):
        TraceSettings(language_filter="slc")
    with pytest.raises(ValueError, match="min_slc is given exactly when"):
        TraceSettings(min_slc=0.5)
    assert TraceSettings(language_filter="slc", min_slc=0.1).min_slc == 0.1


def test_exemplar_traces_in_one_language_for_every_question(shared_data):
    from components.data.teacher_file import read_exemplars

    path = shared_data / "mgsm" / "exemplars.json"
    own = {(r["lang"], r["id"]): r for r in read_exemplars(path, ["en", "fr"])}
    english = read_exemplars(path, ["en", "fr"], trace_language="en")
    assert len(english) == len(own) == 16
    for row in english:
        mine = own[(row["lang"], row["id"])]
        assert row["question"] == mine["question"] and row["gold"] == mine["gold"]
        assert row["completion"] == own[("en", row["id"])]["completion"]  # the English steps, French question
    assert own[("fr", "mgsm-exemplar-1")]["completion"] != own[("en", "mgsm-exemplar-1")]["completion"]
    with pytest.raises(ValueError, match="no exemplars in trace language 'xx'"):
        read_exemplars(path, ["fr"], trace_language="xx")


def test_exemplar_trace_language_needs_exemplars_and_no_language_filter():
    from components.settings import TraceSettings

    with pytest.raises(ValueError, match="read only for from_file exemplars"):
        TraceSettings(exemplar_trace_language="en", language_filter="none")
    with pytest.raises(ValueError, match="set language_filter to none"):
        TraceSettings(from_file="exemplars.json", exemplar_trace_language="en")
    settings = TraceSettings(from_file="exemplars.json", exemplar_trace_language="en", language_filter="none")
    assert settings.exemplar_trace_language == "en"
