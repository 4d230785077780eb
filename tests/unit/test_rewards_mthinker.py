"""M-Thinker reward: R_lc + R_acc + R_cta, table-driven, with a judge behind a real OpenAI-compatible API."""

from __future__ import annotations

import pytest

from components.rewards import build_reward
from components.rewards.mthinker import parse_score
from components.training.judge import attach_judge
from tests.helpers.scripted_api import ScriptedAPI

FR = "<think>\nJanet a seize œufs et elle en vend trois au marché, il lui en reste donc treize.\n</think>\n\n"
EN = "<think>\nJanet has sixteen eggs and sells three of them at the market, so thirteen are left.\n</think>\n\n"
ANSWER_FR = "Il lui reste donc \\boxed{13} œufs au total."
REFERENCE = "Janet has 16 eggs. 16 - 3 = 13. The answer is 13."


class Judge(ScriptedAPI):
    """Answers every judge prompt with the next scripted reply."""

    def __init__(self, replies):
        super().__init__([])
        self.replies = list(replies)

    def answer(self, path, body):
        text = self.replies.pop(0) if self.replies else "<score>0.5</score>"
        return {"id": "c", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


CASES = [  # (completion, English reference present, judge reply, reward)
    (FR + ANSWER_FR, True, "<score>0.75</score>", 1.75),       # consistent, correct, aligned 0.75
    (FR + ANSWER_FR, False, None, 1.0),                          # no English reference: no R_cta
    (FR + ANSWER_FR.replace("13", "12"), True, None, 0.0),       # consistent but wrong: judged never
    (EN + ANSWER_FR, True, None, -1.0),                          # English reasoning: R_lc = -1, no accuracy
    (FR + "So the final total that remains is \\boxed{13} eggs.", True, None, -1.0),  # answer in English
    (ANSWER_FR, True, None, -1.0),                               # no think block
    (FR + FR + ANSWER_FR, True, None, -1.0),                     # two think blocks
    ("<think>16 - 3 = 13</think>\\boxed{13}", True, "no score here", 1.0),  # nothing to judge: passes; bad judge
]


@pytest.mark.parametrize("completion, with_reference, reply, expected", CASES)
def test_reward_table(monkeypatch, completion, with_reference, reply, expected, tmp_path):
    monkeypatch.setenv("POLYREASON_JUDGE_KEY", "k")
    with Judge([reply] if reply else []) as api:
        judge = {"backend": "openai", "model": "judge", "base_url": api.url, "api_key_env": "POLYREASON_JUDGE_KEY",
                 "chat": True, "max_retries": 0}
        reward = build_reward("mthinker", {"judge": judge}, languages=["fr", "en"])
        attach_judge(reward, tmp_path)
        logged = {}
        [value] = reward(prompts=["P"], completions=[completion], gold=["13"], lang=["fr"],
                         en_question=["Janet has 16 eggs and sells 3. How many are left?"],
                         en_reference=[REFERENCE if with_reference else None],
                         log_metric=lambda name, v: logged.__setitem__(name, v))
    assert value == pytest.approx(expected)
    judged = len(api.requests)
    assert judged == (1 if reply else 0)
    if judged:
        assert REFERENCE in api.requests[0]["messages"][0]["content"]
        assert "French reasoning" in api.requests[0]["messages"][0]["content"]
    assert logged["reward/cta_judged"] == float(judged)
    if reply == "no score here":
        assert logged["reward/cta_judge_failures"] == 1.0


def test_reward_columns_are_declared_and_the_judge_is_optional():
    reward = build_reward("mthinker", {}, languages=["fr"])
    assert reward.columns == ("en_question", "en_reference")
    [value] = reward(prompts=["P"], completions=[FR + ANSWER_FR], gold=["13"], lang=["fr"],
                     en_question=["Q"], en_reference=[REFERENCE])
    assert value == 1.0  # no judge configured: R_cta is 0


def test_a_misspelled_judge_is_refused_when_the_profile_loads():
    from components.settings import RewardSettings

    with pytest.raises(ValueError, match="params.judge.base_ur: Extra inputs are not permitted"):
        RewardSettings(name="mthinker", params={"judge": {"backend": "openai", "model": "m", "base_ur": "x"}})


def test_a_judge_that_was_never_attached_is_an_error():
    reward = build_reward("mthinker", {"judge": {"backend": "fake", "model": "fake"}}, languages=["fr"])
    with pytest.raises(RuntimeError, match="no judge attached"):
        reward(prompts=["P"], completions=[FR + ANSWER_FR], gold=["13"], lang=["fr"], en_question=["Q"],
               en_reference=[REFERENCE])


@pytest.mark.parametrize("text, score", [("<score>0.925</score>", 0.925), ("<score> 1 </score>", 1.0),
                                         ("<score>-0.2</score>", None), ("0.5", None),
                                         ("<score>0.1</score> then <score>0.3</score>", 0.3)])
def test_parse_score(text, score):
    assert parse_score(text) == score


def test_a_local_judge_gets_its_chat_template(tiny_model_dir, tmp_path):
    from components.training.judge import judge_function

    judge = {"backend": "transformers", "model": str(tiny_model_dir), "chat": True, "dtype": "float32", "device": "cpu"}
    seen = []
    ask = judge_function(judge, {"temperature": 0.0, "max_new_tokens": 2}, tmp_path)
    reward = build_reward("mthinker", {"judge": judge, "judge_max_new_tokens": 2}, languages=["fr"])
    reward.ask_judge = lambda requests: seen.extend(requests) or ask(requests)
    [value] = reward(prompts=["P"], completions=[FR + ANSWER_FR], gold=["13"], lang=["fr"], en_question=["Q?"],
                     en_reference=[REFERENCE])
    assert value == 1.0  # random weights write no score: R_cta 0, counted as a judge failure
    assert seen[0].startswith("You compare two solutions")
    from components.training.judge import render
    from tests.helpers.tiny_model import build_tokenizer

    rendered = render(build_tokenizer(), seen[0], thinking=False)
    assert rendered.startswith("<|im_start|>user\nYou compare two solutions")
    assert rendered.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")  # the judge answers without thinking
