"""Plain accuracy reward and the shared completion helpers."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from components.rewards.accuracy import AccuracyReward, completion_text, step_and_horizon

CASES = [
    ("<think>3*6=18</think>The answer is \\boxed{18}.", "18", "en", 1.0),
    ("<think>I think \\boxed{18}</think>The answer is \\boxed{17}.", "18", "en", 0.0),  # the response decides
    ("La réponse est \\boxed{18}.", "18", "fr", 1.0),  # no think block: whole text
    ("答えは \\boxed{１８} です。", "18", "ja", 1.0),  # trusted verifier: full-width digits
    ("<think>...</think>\\boxed{19}", "18", "en", 0.0),
]


@pytest.mark.parametrize(("completion", "gold", "lang", "expected"), CASES)
def test_accuracy(completion, gold, lang, expected):
    assert AccuracyReward()(["q"], [completion], gold=[gold], lang=[lang]) == [expected]


def test_chat_completions_and_missing_columns():
    chat = [[{"role": "assistant", "content": "\\boxed{4}"}], [{"role": "assistant", "content": "\\boxed{5}"}]]
    assert AccuracyReward()(["q", "q"], chat, gold=["4", None], lang=["en", "en"]) == [1.0, None]
    assert AccuracyReward()(["q"], ["\\boxed{4}"]) == [None]


def test_completion_text_joins_assistant_turns_only():
    messages = [{"role": "tool", "content": "x"}, {"role": "assistant", "content": "a"},
                {"role": "assistant", "content": [{"type": "text", "text": "b"}, {"type": "image"}]}]
    assert completion_text(messages) == "ab"


def test_step_and_horizon():
    assert step_and_horizon(None) == (0, 0)
    assert step_and_horizon(SimpleNamespace(global_step=3, max_steps=10)) == (3, 10)
