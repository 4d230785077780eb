"""Prompt builders: instructions, prefix control, MGSM few-shot, chat templates with thinking on/off."""

from __future__ import annotations

import pytest

from components.settings import PromptSettings
from components.data.prompts import (
    INSTRUCTIONS,
    OPENERS,
    add_prefix,
    build_prompts,
    few_shot_text,
    label_prefix,
    load_exemplars,
)
from components.records import BenchmarkItem

LANGS = ["en", "es", "fr", "de", "ru", "zh", "ja", "th", "sw", "bn", "te", "pt", "ko", "vi", "ar"]
FR = BenchmarkItem("mgsm-0", "mgsm", "fr", "Combien ?", "3")


@pytest.fixture(scope="module")
def tokenizer():
    from tests.helpers.tiny_model import build_tokenizer

    return build_tokenizer()


@pytest.fixture(scope="module")
def exemplars_path(shared_data):
    return str(shared_data / "mgsm" / "exemplars.json")


def test_every_language_has_an_instruction_and_an_opener():
    assert sorted(INSTRUCTIONS) == sorted(LANGS) == sorted(OPENERS)
    assert all("\\boxed{}" in text for text in INSTRUCTIONS.values())


@pytest.mark.parametrize("style, expected", [
    ("plain", "Combien ?\n\n"),
    ("instruction", "Combien ?\nVeuillez raisonner étape par étape en français et mettez votre réponse finale "
                    "dans \\boxed{}.\n\n"),
    ("prefix", "Combien ?\nVeuillez raisonner étape par étape en français et mettez votre réponse finale "
               "dans \\boxed{}.\n\nD'accord,"),
])
def test_base_model_prompts(style, expected):
    assert build_prompts([FR], PromptSettings(style=style)) == [expected]


def test_multiple_choice_options_are_lettered():
    item = BenchmarkItem("p-1", "mmlu_prox_math", "en", "2+2?", "B", options=("3", "4", "5"))
    assert build_prompts([item], PromptSettings(style="plain")) == ["2+2?\nA. 3\nB. 4\nC. 5\n\n"]


def test_unknown_language_is_an_error_naming_the_known_ones():
    item = BenchmarkItem("x", "m", "xx", "?", "1")
    with pytest.raises(ValueError, match="no instruction for language 'xx' \\(known: ar, bn, de"):
        build_prompts([item], PromptSettings(style="instruction"))


@pytest.mark.parametrize("prompt, thinking, expected", [
    ("<|im_start|>assistant\n", True, "<|im_start|>assistant\n<think>\n好的，"),
    ("<｜Assistant｜><think>\n", True, "<｜Assistant｜><think>\n好的，"),
    ("<｜Assistant｜><think>", True, "<｜Assistant｜><think>\n好的，"),
    ("<think>\n\n</think>\n\n", False, "<think>\n\n</think>\n\n好的，"),
])
def test_prefix_control_goes_after_the_think_tag(prompt, thinking, expected):
    assert add_prefix(prompt, "zh", thinking=thinking) == expected


# ---------------------------------------------------------------- MGSM few-shot


def test_few_shot_uses_native_exemplars_and_labels(exemplars_path):
    settings = PromptSettings(style="few_shot", num_shots=2, exemplars_path=exemplars_path)
    [prompt] = build_prompts([FR], settings)
    blocks = prompt.split("\n\n")
    assert len(blocks) == 3
    assert blocks[0].startswith("Question : Roger a 5 balles de tennis.")
    assert blocks[0].endswith("La réponse est 11.")
    assert blocks[1].endswith("La réponse est 29.")
    assert blocks[2] == "Question : Combien ?\nRéponse étape par étape :"


def test_few_shot_labels_in_cjk_have_no_space(exemplars_path):
    item = BenchmarkItem("mgsm-0", "mgsm", "ja", "いくつ？", "3")
    text = few_shot_text(item, load_exemplars(exemplars_path), 0)
    assert text == "問題：いくつ？\nステップごとの答え："


def test_few_shot_falls_back_to_english_exemplars(exemplars_path):
    item = BenchmarkItem("mmath-0", "mmath", "ko", "몇 개?", "3")
    text = few_shot_text(item, load_exemplars(exemplars_path), 1)
    assert text.startswith("Question: Roger has 5 tennis balls.")
    assert text.endswith("\n\nQuestion: 몇 개?\nStep-by-Step Answer:")


def test_few_shot_needs_an_exemplars_path():
    with pytest.raises(ValueError, match="exemplars_path"):
        build_prompts([FR], PromptSettings(style="few_shot", num_shots=2))


def test_label_prefix_finds_the_shared_label():
    assert label_prefix(["Frage: a", "Frage: b"]) == "Frage: "
    with pytest.raises(ValueError, match="no 'label:' prefix"):
        label_prefix(["abc", "abd"])


# ---------------------------------------------------------------- chat templates


def test_chat_template_with_thinking_on_and_prefix(tokenizer):
    [prompt] = build_prompts([FR], PromptSettings(style="prefix"), tokenizer=tokenizer, chat=True, thinking=True)
    assert prompt == (
        "<|im_start|>user\nCombien ?\nVeuillez raisonner étape par étape en français et mettez votre réponse "
        "finale dans \\boxed{}.<|im_end|>\n<|im_start|>assistant\n<think>\nD'accord,"
    )


def test_chat_template_with_thinking_off(tokenizer):
    [prompt] = build_prompts([FR], PromptSettings(style="plain"), tokenizer=tokenizer, chat=True, thinking=False)
    assert prompt == "<|im_start|>user\nCombien ?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"


def test_chat_few_shot_becomes_earlier_turns(tokenizer, exemplars_path):
    settings = PromptSettings(style="few_shot", num_shots=1, exemplars_path=exemplars_path)
    [prompt] = build_prompts([FR], settings, tokenizer=tokenizer, chat=True, thinking=True)
    assert prompt.startswith("<|im_start|>user\nQuestion : Roger a 5 balles")
    assert "<|im_start|>assistant\nRéponse étape par étape : Roger a commencé" in prompt
    assert prompt.endswith("<|im_start|>user\nQuestion : Combien ?<|im_end|>\n<|im_start|>assistant\n")


def test_chat_needs_a_tokenizer():
    with pytest.raises(ValueError, match="needs a tokenizer"):
        build_prompts([FR], PromptSettings(), chat=True)


# ---------------------------------------------------------------- instruction placement (AdaMame, PCS)

INSTRUCTION_FR = "Veuillez raisonner étape par étape en français et mettez votre réponse finale dans \\boxed{}."


@pytest.mark.parametrize("settings, expected", [
    ({"style": "instruction"}, f"Combien ?\n{INSTRUCTION_FR}\n\n"),                         # PCS prompt control
    ({"style": "instruction", "instruction": "before"}, f"{INSTRUCTION_FR}\n\nCombien ?\n\n"),  # AdaMame
    ({"style": "prefix", "instruction": "before"}, f"{INSTRUCTION_FR}\n\nCombien ?\n\nD'accord,"),
    ({"style": "prefix", "instruction": "none"}, "Combien ?\n\nD'accord,"),                # PCS prefix control
])
def test_instruction_placement(settings, expected):
    assert build_prompts([FR], PromptSettings(**settings)) == [expected]


def test_prefix_control_alone_prefills_the_opener_after_the_think_tag(tokenizer):
    [prompt] = build_prompts([FR], PromptSettings(style="prefix", instruction="none"), tokenizer=tokenizer,
                             chat=True, thinking=True)
    assert prompt == "<|im_start|>user\nCombien ?<|im_end|>\n<|im_start|>assistant\n<think>\nD'accord,"


@pytest.mark.parametrize("settings, message", [
    ({"style": "plain", "instruction": "before"}, "instruction is read by styles instruction and prefix only"),
    ({"style": "instruction", "instruction": "none"}, "use style plain"),
])
def test_meaningless_placements_are_refused(settings, message):
    with pytest.raises(ValueError, match=message):
        PromptSettings(**settings)
