"""Trained adapters are evaluated for real: the transformers backend loads a LoRA adapter through peft, and the
SFT and GRPO adapters concatenate into one adapter that is exactly their successive application.

A random adapter changes greedy completions; an adapter whose B factors are zero changes nothing. The varied
tiny model (weights of std 0.3) makes greedy decoding produce different tokens, so "different" means something.
"""

from __future__ import annotations

import shutil

import pytest

from components.generation import build_generator
from components.settings import ModelSettings, SamplingSettings
from tests.helpers.adapters import write_lora_adapter

PROMPTS = ["Janet has 16 eggs and sells 3 of them.", "珍妮特有16个鸡蛋，在市场上卖了3个。答案是", "x"]
GREEDY = SamplingSettings(n=1, temperature=0.0, max_new_tokens=8, batch_size=4)


@pytest.fixture(scope="module")
def varied_model(tiny_model_dir, tmp_path_factory):
    import torch
    from transformers import AutoModelForCausalLM

    out = tmp_path_factory.mktemp("varied")
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.dim() == 2:
                parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.3)
    model.save_pretrained(out)
    for path in tiny_model_dir.iterdir():
        if path.name.startswith(("tokenizer", "chat_template", "special_tokens")):
            shutil.copy(path, out / path.name)
    return out


def texts(model_dir, tmp_path, adapter=None) -> list[str]:
    settings = ModelSettings(model=str(model_dir), adapter=str(adapter) if adapter else None, dtype="float32",
                             device="cpu")
    generator = build_generator(settings, tmp_path)
    generator.progress = False
    return [samples[0].text for samples in generator.generate(PROMPTS, GREEDY)]


def test_a_trained_adapter_changes_the_completions_and_a_zero_one_does_not(varied_model, tmp_path):
    base = texts(varied_model, tmp_path)
    assert texts(varied_model, tmp_path, write_lora_adapter(varied_model, tmp_path / "zero", scale=0.0)) == base
    changed = texts(varied_model, tmp_path, write_lora_adapter(varied_model, tmp_path / "trained", scale=1.0))
    assert changed != base


def test_concatenated_adapters_equal_their_successive_application(varied_model, tmp_path):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from components.training.adapters import combine_adapters

    first = write_lora_adapter(varied_model, tmp_path / "sft", scale=0.5, seed=1)
    merged = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(varied_model), first).merge_and_unload()
    merged.save_pretrained(tmp_path / "sft-merged")
    second = write_lora_adapter(tmp_path / "sft-merged", tmp_path / "grpo", scale=0.5, seed=2)
    combined = combine_adapters(str(varied_model), [str(first), str(second)], tmp_path / "combined")

    tokens = torch.randint(0, 100, (2, 12), generator=torch.Generator().manual_seed(3))
    stepwise = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tmp_path / "sft-merged"), second)
    one = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(varied_model), combined)
    with torch.no_grad():
        assert torch.allclose(stepwise(tokens).logits, one(tokens).logits, atol=1e-4)
    assert (combined / "adapter_config.json").is_file() and not (combined / "default").exists()
