"""GRPO prompts are rendered like SFT's and evaluation's: the chat template with the thinking switch.

The tokenizer is the tiny model's byte-level BPE with a Qwen3-style template
(``enable_thinking=False`` closes an empty think block; thinking on leaves the
assistant turn open for the model's own ``<think>``), so the rendering is
checked where the shipped CPU models cannot show it (they have no template in
play). What trl itself makes of these rows is checked in
``tests/integration/test_grpo_chat_prompts.py``.
"""

from __future__ import annotations

import pytest

from components.settings import GRPOStageSettings, ModelSettings, PromptSettings
from components.training.grpo_data import training_rows

INSTRUCTION_FR = "Veuillez raisonner étape par étape en français et mettez votre réponse finale dans \\boxed{}."
QUESTION = "Janet a 16 œufs. Combien ?"


@pytest.fixture(scope="module")
def tokenizer():
    from tests.helpers.tiny_model import build_tokenizer

    return build_tokenizer()


def section(**prompt) -> GRPOStageSettings:
    return GRPOStageSettings(model={"model": "m"}, dataset="d.jsonl", prompt=PromptSettings(**prompt))


CASES = [  # (row, prompt settings, thinking, the exact string trl receives)
    ({"question": QUESTION}, {}, True,
     f"<|im_start|>user\n{QUESTION}\n{INSTRUCTION_FR}<|im_end|>\n<|im_start|>assistant\n"),
    ({"question": QUESTION}, {}, False,
     f"<|im_start|>user\n{QUESTION}\n{INSTRUCTION_FR}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"),
    ({"question": QUESTION}, {"instruction": "before"}, True,
     f"<|im_start|>user\n{INSTRUCTION_FR}\n\n{QUESTION}<|im_end|>\n<|im_start|>assistant\n"),
    ({"question": QUESTION}, {"style": "prefix", "instruction": "none"}, True,
     f"<|im_start|>user\n{QUESTION}<|im_end|>\n<|im_start|>assistant\n<think>\nD'accord,"),
    # the data stage stores the user's turn as a string: it is templated, not used raw
    ({"prompt": f"{QUESTION}\n{INSTRUCTION_FR}"}, {}, True,
     f"<|im_start|>user\n{QUESTION}\n{INSTRUCTION_FR}<|im_end|>\n<|im_start|>assistant\n"),
    ({"prompt": [{"role": "user", "content": "Q ?"}]}, {}, False,
     "<|im_start|>user\nQ ?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"),
    # a question wins over a stored prompt: the stage's own prompt settings apply
    ({"question": QUESTION, "prompt": "stale text"}, {"style": "plain"}, True,
     f"<|im_start|>user\n{QUESTION}<|im_end|>\n<|im_start|>assistant\n"),
]


@pytest.mark.parametrize("row, prompt, thinking, expected", CASES)
def test_every_row_goes_through_the_chat_template_with_the_thinking_switch(tokenizer, row, prompt, thinking,
                                                                           expected):
    model = ModelSettings(model="m", chat=True, thinking=thinking)
    [out] = training_rows([{"lang": "fr", "gold": "13", **row}], section(**prompt), model, tokenizer)
    assert out["prompt"] == expected
    assert (out["gold"], out["lang"], out["id"]) == ("13", "fr", "0")


def test_base_models_get_the_text_and_a_blank_line(tokenizer):
    model = ModelSettings(model="m")
    rows = [{"lang": "fr", "gold": "1", "prompt": "Q ?"}, {"lang": "fr", "gold": "1", "question": "Q ?"}]
    out = training_rows(rows, section(style="plain"), model, tokenizer)
    assert [r["prompt"] for r in out] == ["Q ?\n\n", "Q ?\n\n"]


def test_reward_columns_are_kept_and_a_row_without_question_or_prompt_is_refused(tokenizer):
    model = ModelSettings(model="m")
    row = {"lang": "fr", "gold": "1", "question": "Q ?", "en_question": "Q?"}
    assert training_rows([row], section(), model, tokenizer, keep=("en_question",))[0]["en_question"] == "Q?"
    with pytest.raises(ValueError, match="row 0 has neither 'question'"):
        training_rows([{"lang": "fr", "gold": "1"}], section(), model, tokenizer)


def test_chat_messages_need_a_chat_model(tokenizer):
    with pytest.raises(ValueError, match="chat messages need a chat model"):
        training_rows([{"lang": "fr", "gold": "1", "prompt": [{"role": "user", "content": "Q"}]}], section(),
                      ModelSettings(model="m"), tokenizer)


def test_prompts_longer_than_max_prompt_tokens_are_left_out(tokenizer, caplog):
    """verl's filter_overlong_prompts (AdaMame: max prompt length 512): a longer prompt is dropped, not cut."""
    model = ModelSettings(model="m", chat=True, thinking=True)
    rows = [{"id": "short", "lang": "fr", "gold": "1", "question": QUESTION},
            {"id": "long", "lang": "fr", "gold": "1", "question": QUESTION * 40}]
    lengths = {r["id"]: len(tokenizer(r["prompt"])["input_ids"]) for r in training_rows(rows, section(), model, tokenizer)}
    limit = lengths["short"]  # the short prompt fits exactly; the long one is far over
    assert lengths["long"] > limit
    kept = training_rows(rows, section().model_copy(update={"max_prompt_tokens": limit}), model, tokenizer)
    assert [r["id"] for r in kept] == ["short"]
    assert "1 of 2 prompts are longer than grpo.max_prompt_tokens" in caplog.text
    with pytest.raises(ValueError, match="every one of the 2 prompts"):
        training_rows(rows, section().model_copy(update={"max_prompt_tokens": 1}), model, tokenizer)


def test_max_prompt_tokens_is_refused_with_coupled_groups():
    with pytest.raises(ValueError, match="max_prompt_tokens leaves prompts out"):
        GRPOStageSettings(model={"model": "m"}, dataset="d.jsonl", max_prompt_tokens=512, coupling="language")
