"""The search tool loop with a scripted policy: turns, hierarchical rounds over BM25, masks, budgets."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from components.settings.lcrl import LcRLSettings
from components.training import search_rollouts
from components.training.search_rollouts import SearchRollout

SCRIPTS = {  # prompt -> the policy's turns, in order
    "Q1": ["<think>look it up</think><search> capitale du Japon </search>", "<search> Tokio 東京 </search>",
           "<search> Tokyo capital </search>", "<answer> Tokyo </answer>"],
    "Q2": ["<answer> Paris </answer> trailing text"],
    "Q3": ["I am not sure.", "<answer> Ottawa </answer>"],
}


@pytest.fixture(scope="module")
def tokenizer():
    from tests.helpers.tiny_model import build_tokenizer

    return build_tokenizer()


def run(monkeypatch, tokenizer, retriever, prompts, budget=4000, **settings):
    calls = []

    def scripted(trainer):
        def generate(sequences, max_new_tokens):
            out = []
            for sequence in sequences:
                prompt = next(p for p in SCRIPTS if tokenizer(p, add_special_tokens=False)["input_ids"] ==
                              sequence[: len(tokenizer(p, add_special_tokens=False)["input_ids"])])
                turn = sum(1 for c in calls if c == prompt)
                calls.append(prompt)
                out.append(tokenizer(SCRIPTS[prompt][turn], add_special_tokens=False)["input_ids"][:max_new_tokens])
            return out
        return generate

    monkeypatch.setattr(search_rollouts, "turn_generator", scripted)
    trainer = SimpleNamespace(processing_class=tokenizer, eos_token_ids=[tokenizer.eos_token_id])
    loop = SearchRollout(LcRLSettings(**settings), retriever, {p: "fr" for p in SCRIPTS}, budget)
    return loop(prompts, trainer)


def pieces(tokenizer, ids, mask, keep):
    return tokenizer.decode([t for t, m in zip(ids, mask) if m == keep])


def test_three_rounds_native_others_english(monkeypatch, tokenizer, retriever):
    out = run(monkeypatch, tokenizer, retriever, ["Q1", "Q2", "Q3"])
    assert out["search_calls"] == [3, 0, 0] and out["logprobs"] is None
    ids, mask = out["completion_ids"][0], out["env_mask"][0]
    assert len(ids) == len(mask)
    assert pieces(tokenizer, ids, mask, 1) == "".join(SCRIPTS["Q1"])        # the policy's tokens only
    blocks = pieces(tokenizer, ids, mask, 0).split("<information>")[1:]    # inserted: three information blocks
    assert len(blocks) == 3
    assert "[fr] 1. Tokyo: Tokyo est la capitale du Japon" in blocks[0] and "[en]" not in blocks[0]
    assert "[fr]" not in blocks[1] and "[ja]" in blocks[1] and "[es]" in blocks[1]
    assert "[en]" in blocks[2] and "[ja]" not in blocks[2]


def test_answer_ends_turn_and_invalid_turn_gets_a_masked_notice(monkeypatch, tokenizer, retriever):
    out = run(monkeypatch, tokenizer, retriever, ["Q2", "Q3"])
    first = tokenizer.decode(out["completion_ids"][0])
    assert first == "<answer> Paris </answer>" and set(out["env_mask"][0]) == {1}   # cut at the stop string
    ids, mask = out["completion_ids"][1], out["env_mask"][1]
    assert "No action found" in pieces(tokenizer, ids, mask, 0)
    assert pieces(tokenizer, ids, mask, 1) == "I am not sure.<answer> Ottawa </answer>"


def test_single_language_ablation_and_search_budget(monkeypatch, tokenizer, retriever):
    out = run(monkeypatch, tokenizer, retriever, ["Q1"], rounds=[["query"]])
    blocks = pieces(tokenizer, out["completion_ids"][0], out["env_mask"][0], 0).split("<information>")[1:]
    assert "[fr]" in blocks[0] and not any(f"[{c}]" in b for b in blocks for c in ("en", "es", "ja"))
    out = run(monkeypatch, tokenizer, retriever, ["Q1"], max_searches=1)   # one search, then a last turn
    assert out["search_calls"] == [1]
    assert pieces(tokenizer, out["completion_ids"][0], out["env_mask"][0], 1) == "".join(SCRIPTS["Q1"][:2])


def test_completion_stays_within_budget(monkeypatch, tokenizer, retriever):
    out = run(monkeypatch, tokenizer, retriever, ["Q1"], budget=120, max_information_tokens=40)
    assert len(out["completion_ids"][0]) <= 120
