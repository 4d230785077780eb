"""Translation gates (language, numbers, judge), the rejected table, chrF per language."""

from __future__ import annotations

import pytest

from components.settings import SamplingSettings
from components.data.translation import (
    TranslationResult, ascii_digits, chrf_by_language, clean_translation, missing_numbers, parse_judge_score,
    translate_rows, translation_prompt,
)
from components.generation.base import Completion
from components.language import get_detector


class TableGenerator:
    """Answers each prompt by the first key of ``table`` found in it (plumbing stub, not a model)."""

    name = "table"

    def __init__(self, table):
        self.table = table
        self.prompts: list[str] = []

    def generate(self, prompts, sampling):
        self.prompts += prompts
        out = []
        for prompt in prompts:
            text = next(v for k, v in self.table.items() if k in prompt)
            out.append([Completion(text, 1)] * sampling.n)
        return out


@pytest.mark.parametrize(("source", "translation", "missing"), [
    ("Tom has 18 apples and 2.5 pears.", "Tom a 18 pommes et 2,5 poires.", []),
    ("It costs 1,000 dollars.", "Cela coûte 1 000 dollars.", []),
    ("It costs 1,000 dollars.", "Cela coûte 1.000 dollars.", []),
    ("He has 18 kids and 3 dogs.", "Il a 18 enfants et trois chiens.", ["3"]),
    ("He has 18 kids.", "เขามีลูก ๑๘ คน", []),
    ("He has 18 kids.", "彼には１８人の子供がいる。", []),
    ("Add 12 and 5.", "Ajoutez 125.", ["12", "5"]),
    ("No numbers here.", "Pas de nombres.", []),
])
def test_missing_numbers(source, translation, missing):
    assert missing_numbers(source, translation) == missing


def test_ascii_digits_and_cleaning():
    assert ascii_digits("১২ + ๓") == "12 + 3"
    assert clean_translation('<think>x</think>\n« Bonjour 3 »') == "Bonjour 3"
    assert clean_translation("French translation: Il a 3 chats.") == "Il a 3 chats."
    assert parse_judge_score("I would say 5.") == 5 and parse_judge_score("excellent") is None


def test_prompt_names_both_languages():
    prompt = translation_prompt("Tom has 3 cats.", "en", "ja")
    assert "from English into Japanese" in prompt and prompt.endswith("English: Tom has 3 cats.\nJapanese:")


ROWS = [{"id": "a", "row": 0, "question": "Tom has 18 apples and eats 3.", "gold": "15", "source": "s"},
        {"id": "b", "row": 1, "question": "Ana has 4 cats and 2 dogs.", "gold": "6", "source": "s"}]


def test_translate_rows_gates_and_keeps_rejections():
    generator = TableGenerator({
        "English: Tom has 18": "Tom a 18 pommes et en mange 3.",
        "English: Ana has 4": "Ana a quatre chats et 2 chiens.",  # lost "4"
    })
    detector = get_detector(["fr", "ja"])
    result = translate_rows(ROWS, ["fr"], generator, SamplingSettings(n=3), detector)
    assert [r["id"] for r in result.accepted] == ["a"]
    assert result.accepted[0]["question"] == "Tom a 18 pommes et en mange 3."
    assert result.accepted[0]["source_question"] == ROWS[0]["question"] and result.accepted[0]["lang"] == "fr"
    assert [(r["id"], r["reason"], r["detail"]) for r in result.rejected] == [("b", "missing_numbers", "4")]


def test_wrong_language_and_judge_gates():
    translator = TableGenerator({"English: Tom has 18": "Tom has 18 apples and eats 3.",  # untranslated
                                 "English: Ana": "Ana a 4 chats et 2 chiens."})
    judge = TableGenerator({"Ana a 4": "2"})
    result = translate_rows(ROWS, ["fr"], translator, SamplingSettings(), get_detector(["fr"]),
                            judge=judge, judge_min_score=4)
    assert result.accepted == []
    assert [(r["id"], r["reason"]) for r in result.rejected] == [("a", "wrong_language"), ("b", "judge_score")]
    assert result.rejected[1]["judge_score"] == 2
    assert len(judge.prompts) == 1  # the judge only sees translations that passed the cheap gates


def test_chrf_per_language_against_references():
    accepted = [{"id": "a", "row": 0, "lang": "fr", "question": "le chat est noir"}]
    rejected = [{"id": "b", "row": 1, "lang": "fr", "question": "xyz", "reason": "wrong_language"}]
    scores = chrf_by_language(TranslationResult(accepted, rejected), {"fr": {0: "le chat est noir", 1: "le chien"}})
    assert scores["fr"]["chrf"] == pytest.approx(100.0)
    assert scores["fr"]["n_chrf"] == 1 and scores["fr"]["n_chrf_all"] == 2
    assert scores["fr"]["chrf_all"] < 100.0
