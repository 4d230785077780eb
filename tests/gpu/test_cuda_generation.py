"""GPU-only checks (skipped without CUDA): the transformers backend on CUDA matches the CPU
on greedy outputs of the tiny model, and vLLM on the GPU matches both."""

from __future__ import annotations

import importlib.util

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]


def greedy(model_dir, backend: str, device: str, tmp_path):
    from components.settings import ModelSettings, SamplingSettings
    from components.generation import build_generator

    model = ModelSettings(backend=backend, model=str(model_dir), dtype="float32", device=device, chat=True)
    generator = build_generator(model, tmp_path)
    prompts = ["Combien font 2+2 ?", "Wie viel ist 3+4?", "2+2は？"]
    outputs = generator.generate(prompts, SamplingSettings(n=1, temperature=0.0, max_new_tokens=16))
    return [samples[0].text for samples in outputs]


def test_cuda_and_cpu_agree_on_greedy_outputs(tiny_model_dir, tmp_path):
    assert greedy(tiny_model_dir, "transformers", "cuda", tmp_path) == greedy(tiny_model_dir, "transformers", "cpu", tmp_path)


@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="needs the gpu extra (vllm)")
def test_vllm_on_gpu_agrees_with_transformers(tiny_model_dir, tmp_path):
    assert greedy(tiny_model_dir, "vllm", "cuda", tmp_path) == greedy(tiny_model_dir, "transformers", "cuda", tmp_path)
