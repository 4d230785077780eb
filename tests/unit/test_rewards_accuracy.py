"""Plain accuracy reward and the shared completion helpers."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from components.rewards.accuracy import AccuracyReward, completion_text, step_and_horizon

CASES = [  # (completion, gold, lang, strict reward, lenient reward)
    ("<think>3*6=18</think>The answer is \\boxed{18}.", "18", "en", 1.0, 1.0),  # boxed after </think>
    ("<think>I think \\boxed{18}</think>The answer is \\boxed{17}.", "18", "en", 0.0, 0.0),  # the response decides
    ("<think>3*6 = \\boxed{18}", "18", "en", 0.0, 1.0),  # truncated inside the reasoning: no answer when strict
    ("<think>3*6=18</think>The answer is 18.", "18", "en", 0.0, 1.0),  # a phrase, not the asked format
    ("La réponse est \\boxed{18}.", "18", "fr", 0.0, 1.0),  # no think block: lenient reads the whole text
    ("<think>…</think>答えは \\boxed{１８} です。", "18", "ja", 1.0, 1.0),  # trusted verifier: full-width digits
    ("<think>...</think>\\boxed{19}", "18", "en", 0.0, 0.0),
]


@pytest.mark.parametrize(("completion", "gold", "lang", "strict", "lenient"), CASES)
def test_accuracy(completion, gold, lang, strict, lenient):
    assert AccuracyReward()(["q"], [completion], gold=[gold], lang=[lang]) == [strict]  # strict by default
    assert AccuracyReward(extraction="lenient")(["q"], [completion], gold=[gold], lang=[lang]) == [lenient]


def test_chat_completions_and_missing_columns():
    chat = [[{"role": "assistant", "content": "<think>2+2</think>\\boxed{4}"}],
            [{"role": "assistant", "content": "\\boxed{5}"}]]
    assert AccuracyReward()(["q", "q"], chat, gold=["4", None], lang=["en", "en"]) == [1.0, None]
    assert AccuracyReward()(["q"], ["\\boxed{4}"]) == [None]
    with pytest.raises(ValueError, match="unknown extraction 'loose'"):
        AccuracyReward(extraction="loose")


def test_completion_text_joins_assistant_turns_only():
    messages = [{"role": "tool", "content": "x"}, {"role": "assistant", "content": "a"},
                {"role": "assistant", "content": [{"type": "text", "text": "b"}, {"type": "image"}]}]
    assert completion_text(messages) == "ab"


def test_step_and_horizon():
    assert step_and_horizon(None) == (0, 0)
    assert step_and_horizon(SimpleNamespace(global_step=3, max_steps=10)) == (3, 10)
