"""Greedy outputs of the transformers backend on a tiny model, pinned before its speed work.

``data/tiny_greedy_pins.json`` holds what the backend generated (text and token count per
prompt) for prompts of very different lengths, with and without stop strings, in batches
of one and of several prompts, when it ran one plain ``generate`` per batch. Batching
changes (length buckets, a static cache, thread settings) must not change one token.
The model is the tiny test configuration with untied output embeddings and a larger
initialisation (0.2), so that, unlike the tied tiny model (which repeats its last token),
each continuation depends on the whole context and on positions. The pins depend on the
random weights, so on torch/transformers versions: after an upgrade, check that every case
still agrees with ``batch_size=1`` and re-pin (``python -m tests.unit.test_generation_greedy_pins OUT.json``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from components.settings import ModelSettings, SamplingSettings
from components.generation.transformers_backend import TransformersGenerator

PINS = Path(__file__).parent / "data" / "tiny_greedy_pins.json"
PROMPTS = [
    "x",
    "Janet has 16 eggs",
    "珍妮特有16个鸡蛋，在市场上卖了3个。答案是",
    "La réponse est " * 12,
    "<think> reasoning </think> final answer \\boxed{42} 0 1 2 3 4 5 6 7 8 9 + - * / = ( ) { }",
    "A Janet tem 16 ovos e vende 3 no mercado.",
    "Let me think step by step. First, 16 - 3 = 13, so",
]
CASES = {  # name -> (sampling, stop strings)
    "batch1": (SamplingSettings(max_new_tokens=12, batch_size=1), []),
    "batch3": (SamplingSettings(max_new_tokens=12, batch_size=3), []),
    "batch8_long": (SamplingSettings(max_new_tokens=24, batch_size=8), []),
    "batch4_stops": (SamplingSettings(max_new_tokens=24, batch_size=4), ["13", " marché", "Janet", "\n"]),
    "batch2_n3": (SamplingSettings(n=3, max_new_tokens=8, batch_size=2), []),
}


def build_context_model(out_dir: Path) -> Path:
    """The tiny test model with untied output embeddings and initializer range 0.2."""
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig, Qwen2Config

    from tests.helpers.tiny_model import build_tokenizer

    tokenizer = build_tokenizer()
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=1024,
                         tie_word_embeddings=False, initializer_range=0.2, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, bos_token_id=None)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config)
    model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id,
                                               pad_token_id=tokenizer.pad_token_id, do_sample=False)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir


def generate_all(model_dir: Path, cache_dir: Path) -> dict:
    generator = TransformersGenerator(ModelSettings(model=str(model_dir), dtype="float32"), cache_dir, progress=False)
    out = {}
    for name, (sampling, stop) in CASES.items():
        result = generator.generate(PROMPTS, sampling, stop)
        out[name] = [[[c.text, c.num_tokens] for c in samples] for samples in result]
    return out


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model_dir = build_context_model(tmp_path_factory.mktemp("context-model"))
        return generate_all(model_dir, tmp_path_factory.mktemp("cache"))
    finally:
        torch.set_num_threads(threads)


@pytest.mark.parametrize("case", sorted(CASES))
def test_greedy_outputs_match_the_pins(generated, case):
    assert generated[case] == json.loads(PINS.read_text(encoding="utf-8"))[case]


def test_the_pinned_cases_exercise_what_batching_can_break():
    pins = json.loads(PINS.read_text(encoding="utf-8"))
    assert pins["batch1"] == pins["batch3"]  # greedy does not depend on the batch
    assert len({text for text, _ in (s[0] for s in pins["batch1"])}) == len(PROMPTS)  # context-dependent
    stopped = [count for (_, count), *_ in pins["batch4_stops"]]
    assert min(stopped) < 24 and max(stopped) == 24  # some samples stop early, others run to the budget
    assert all(len({tuple(c) for c in samples}) == 1 for samples in pins["batch2_n3"])


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as work:
        pins = generate_all(build_context_model(Path(work) / "model"), Path(work) / "cache")
    Path(sys.argv[1]).write_text(json.dumps(pins, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
