"""The search loop at test time over a scripted generator: turns, rounds over BM25, budgets, samples."""

from __future__ import annotations

import pytest

from components.generation.base import Completion
from components.generation.search_generator import SearchGenerator
from components.settings import SamplingSettings
from components.settings.search import SearchSettings

SCRIPTS = {  # prompt -> the model's turns, in order
    "Q1 ": ["<think>look it up</think><search> capitale du Japon </search>", "<search> Tokio 東京 </search>",
            "<search> Tokyo capital </search>", "<answer> Tokyo </answer>"],
    "Q2 ": ["<answer> Paris </answer> trailing text"],
    "Q3 ": ["I am not sure and I keep writing without any tag at all", "<answer> Ottawa </answer>"],
    "Q4 ": ["Done."],
    "Q5 ": ["<search> Tokyo capitale", "<answer> Tokyo </answer>"],  # a backend that drops the stop string (vLLM)
}


class Scripted:
    """A generator that plays each prompt's script, one turn per call (a turn is cut at the room it gets)."""

    def __init__(self, tokenizer):
        self.tokenizer, self.calls, self.rooms, self.seeds = tokenizer, [], [], []

    def generate(self, prompts, sampling, stop=()):
        assert sampling.n == 1 and tuple(stop) == ("</search>", "</answer>")
        self.rooms.append(sampling.max_new_tokens)
        self.seeds.append(sampling.seed)
        out = []
        for text in prompts:
            prompt = next(p for p in SCRIPTS if text.startswith(p))
            turn = text.count("<information>") + text.count("No action found")  # the turns this rollout took
            self.calls.append(prompt)
            ids = self.tokenizer(SCRIPTS[prompt][turn], add_special_tokens=False)["input_ids"][: sampling.max_new_tokens]
            out.append([Completion(self.tokenizer.decode(ids), len(ids))])
        return out


@pytest.fixture(scope="module")
def tokenizer():
    from tests.helpers.tiny_model import build_tokenizer

    return build_tokenizer()


def run(tokenizer, retriever, prompts, sampling=None, **settings):
    inner = Scripted(tokenizer)
    loop = SearchGenerator(inner, retriever, SearchSettings(**settings), {p: "fr" for p in SCRIPTS}, tokenizer)
    return loop.generate(prompts, sampling or SamplingSettings(max_new_tokens=4000)), inner


def test_three_rounds_query_language_then_others_then_english(tokenizer, retriever):
    [[completion]], _ = run(tokenizer, retriever, ["Q1 "])
    blocks = completion.text.split("<information>")[1:]
    assert len(blocks) == 3 and completion.text.endswith("<answer> Tokyo </answer>")
    assert "[fr] 1. Tokyo: Tokyo est la capitale du Japon" in blocks[0] and "[en]" not in blocks[0]
    assert "[fr]" not in blocks[1] and "[ja]" in blocks[1] and "[es]" in blocks[1]
    assert "[en]" in blocks[2] and "[ja]" not in blocks[2]
    model_tokens = sum(len(tokenizer(turn, add_special_tokens=False)["input_ids"]) for turn in SCRIPTS["Q1 "])
    assert completion.num_tokens == model_tokens  # the model's tokens only, not the inserted passages


@pytest.mark.parametrize("prompt, settings, expected", [
    ("Q2 ", {}, "<answer> Paris </answer>"),  # cut after the answer: the rest was never asked for
    ("Q4 ", {}, "Done."),                     # no tag, stopped before its room: the model ended its text
    ("Q5 ", {"max_searches": 0}, "<search> Tokyo capitale</search>"),  # closed; the last turn is not answered
])
def test_a_turn_ends_the_rollout(tokenizer, retriever, prompt, settings, expected):
    [[completion]], inner = run(tokenizer, retriever, [prompt], **settings)
    assert completion.text == expected and inner.calls == [prompt]


def test_a_turn_cut_by_its_room_gets_the_notice_and_goes_on(tokenizer, retriever):
    [[completion]], inner = run(tokenizer, retriever, ["Q3 "], max_turn_tokens=20)
    first, rest = completion.text.split("No action found", 1)
    assert len(tokenizer(first.strip(), add_special_tokens=False)["input_ids"]) == 20
    assert rest.rstrip().endswith("<answer> Ottawa </answer>") and inner.rooms == [20, 20]


def test_a_dropped_stop_string_is_closed_and_searched(tokenizer, retriever):
    [[completion]], inner = run(tokenizer, retriever, ["Q5 "], max_searches=1)
    assert completion.text.startswith("<search> Tokyo capitale</search>\n\n<information>\n[fr] 1. Tokyo:")
    assert completion.text.endswith("<answer> Tokyo </answer>") and inner.calls == ["Q5 ", "Q5 "]


def test_information_blocks_and_the_whole_completion_keep_their_budgets(tokenizer, retriever):
    [[completion]], inner = run(tokenizer, retriever, ["Q1 "], SamplingSettings(max_new_tokens=120),
                                max_information_tokens=40)
    for block in completion.text.split("<information>")[1:]:
        assert len(tokenizer("<information>" + block.split("</information>")[0] + "</information>",
                             add_special_tokens=False)["input_ids"]) <= 40
    assert len(tokenizer(completion.text, add_special_tokens=False)["input_ids"]) <= 120 + 4  # re-tokenizing joins
    assert inner.rooms == sorted(inner.rooms, reverse=True) and inner.rooms[0] <= 120


@pytest.mark.parametrize("temperature, calls", [(0.0, 1), (0.7, 3)])
def test_greedy_copies_one_rollout_sampling_runs_each(tokenizer, retriever, temperature, calls):
    out, inner = run(tokenizer, retriever, ["Q2 "], SamplingSettings(n=3, temperature=temperature, seed=5))
    assert [c.text for c in out[0]] == ["<answer> Paris </answer>"] * 3 and len(inner.calls) == calls
    assert inner.seeds == [5]  # one turn: the seed of turn 0
