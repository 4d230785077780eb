"""Answer-interface probe: prompt rewriting per language and the side-by-side report by hand."""

from __future__ import annotations

import pytest

from components.audit.diagnostics import Judgement
from components.audit.probe import NUMBER_ONLY_INSTRUCTIONS, interface_probe, number_only_prompt
from components.data.prompts import INSTRUCTIONS
from components.language import BASE_LANGUAGES


def test_every_base_language_has_a_number_only_instruction():
    assert set(BASE_LANGUAGES) <= set(NUMBER_ONLY_INSTRUCTIONS)
    assert all("\\boxed{}" in text for text in NUMBER_ONLY_INSTRUCTIONS.values())


def test_rewrite_keeps_the_prompt_and_adds_the_instruction_after_the_standard_one():
    chat = f"<|im_start|>user\n問題です。\n{INSTRUCTIONS['ja']}<|im_end|>\n<|im_start|>assistant\n"
    rewritten = number_only_prompt(chat, "ja")
    assert rewritten == (f"<|im_start|>user\n問題です。\n{INSTRUCTIONS['ja']} {NUMBER_ONLY_INSTRUCTIONS['ja']}"
                         "<|im_end|>\n<|im_start|>assistant\n")


def test_prompts_without_an_instruction_are_refused():
    with pytest.raises(ValueError, match="needs prompt.style 'instruction' or 'prefix'"):
        number_only_prompt("Question: 2+2?\nStep-by-Step Answer:", "en")
    with pytest.raises(ValueError, match="no number-only instruction for 'xx'"):
        number_only_prompt("2+2?", "xx")


def _rows(lang: str, spec: list[tuple[bool, bool]]) -> list[Judgement]:
    return [Judgement(i, f"p{i}", lang, t, {"exact": e}) for i, (t, e) in enumerate(spec)]


def test_interface_probe_by_hand():
    # standard interface: en accuracy 2/4 with no FN; ja accuracy 1/4 and exact rejects that one (FNR 1)
    standard = _rows("en", [(True, True), (True, True), (False, False), (False, False)]) + _rows(
        "ja", [(True, False), (False, False), (False, False), (False, False)])
    # number-only interface: same accuracies, exact agrees with trusted everywhere
    number_only = _rows("en", [(True, True), (True, True), (False, False), (False, False)]) + _rows(
        "ja", [(True, True), (False, False), (False, False), (False, False)])
    probe = interface_probe(standard, number_only, ["exact"])
    assert probe["accuracy"] == {"standard": {"en": 0.5, "ja": 0.25}, "number_only": {"en": 0.5, "ja": 0.25}}
    assert probe["accuracy_gap"] == {"standard": 0.25, "number_only": 0.25}
    assert probe["capability_gap"] == 0.25  # the gap that stays
    exact = probe["verifiers"]["exact"]
    assert exact["standard"] == {"fnr": 1.0, "fpr": 0.0, "err": 0.25}
    assert exact["number_only"] == {"fnr": 0.0, "fpr": 0.0, "err": 0.0}
    assert exact["format_effect"] == {"fnr": 1.0, "fpr": 0.0, "err": 0.25}  # the VLB drop
