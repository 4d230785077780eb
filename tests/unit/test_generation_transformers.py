"""The transformers backend on the tiny from-config model: batching, n samples, seeds, errors."""

from __future__ import annotations

import pytest

from components.settings import ModelSettings, SamplingSettings
from components.generation import GenerationError
from components.generation.transformers_backend import TransformersGenerator

PROMPTS = ["Janet has 16 eggs", "珍妮特有16个鸡蛋", "La réponse est", "x"]


@pytest.fixture(scope="module")
def one_thread():
    """Tiny models are ~10x slower with 2 threads on a busy 2-core machine; use one here."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def generator(tiny_model_dir, tmp_path_factory, one_thread):
    gen = TransformersGenerator(ModelSettings(model=str(tiny_model_dir), dtype="float32"),
                                tmp_path_factory.mktemp("cache"), progress=False)
    gen.load()
    return gen


def test_greedy_gives_n_identical_samples_with_token_counts(generator):
    out = generator.generate(PROMPTS, SamplingSettings(n=2, max_new_tokens=5, batch_size=3))
    assert [len(samples) for samples in out] == [2, 2, 2, 2]
    assert all(samples[0] == samples[1] for samples in out)
    assert all(0 < c.num_tokens <= 5 and isinstance(c.text, str) for samples in out for c in samples)
    assert generator.stats.prompts == 4 and generator.stats.tokens == sum(c.num_tokens for s in out for c in s)


def test_greedy_does_not_depend_on_batching(generator):
    sampling = SamplingSettings(max_new_tokens=5, batch_size=1)
    one_by_one = generator.generate(PROMPTS, sampling)
    together = generator.generate(PROMPTS, sampling.model_copy(update={"batch_size": 4}))
    assert one_by_one == together


def test_sampling_is_seeded(generator):
    sampling = SamplingSettings(n=3, temperature=1.0, top_p=0.95, seed=5, max_new_tokens=6, batch_size=2)
    first = generator.generate(PROMPTS[:2], sampling)
    assert first == generator.generate(PROMPTS[:2], sampling)
    assert first != generator.generate(PROMPTS[:2], sampling.model_copy(update={"seed": 6}))
    assert [len(samples) for samples in first] == [3, 3]
    assert len({c.text for c in first[0]}) > 1  # random weights + temperature 1: samples differ


def test_sampled_rows_do_not_depend_on_the_cut(generator):
    # a fanned-out, pooled or sequential run hands a prompt to the backend in another call, batch or order:
    # each prompt must draw the same samples however the work is cut
    sampling = SamplingSettings(n=2, temperature=1.0, top_p=0.95, seed=3, max_new_tokens=6, batch_size=4)
    whole = generator.generate(PROMPTS, sampling)
    one_by_one = generator.generate(PROMPTS, sampling.model_copy(update={"batch_size": 1}))
    reversed_order = generator.generate(PROMPTS[::-1], sampling.model_copy(update={"batch_size": 3}))[::-1]
    two_calls = generator.generate(PROMPTS[:1], sampling) + generator.generate(PROMPTS[1:], sampling)
    alone = [generator.generate([prompt], sampling)[0] for prompt in PROMPTS]
    assert whole == one_by_one == reversed_order == two_calls == alone
    assert len({c.text for samples in whole for c in samples}) > len(PROMPTS)  # really sampled, not one text


def test_a_batch_that_raises_is_named(generator, monkeypatch):
    calls = []
    original = generator._model.generate

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("out of memory")
        return original(*args, **kwargs)

    monkeypatch.setattr(generator._model, "generate", flaky)
    with pytest.raises(GenerationError, match=f"model {generator.settings.model}: generation failed on batch 1: "
                                              "RuntimeError: out of memory"):
        generator.generate(PROMPTS, SamplingSettings(max_new_tokens=2, batch_size=2))


def test_eos_ends_a_sample_and_is_counted(generator):
    # Make the end-of-sequence token the only choice: every sample is that one token.
    import torch

    eos = generator._tokenizer.eos_token_id
    head = generator._model.get_output_embeddings()
    original = head.forward

    def only_eos(hidden):
        logits = original(hidden)
        bias = torch.full_like(logits, -1e4)
        bias[..., eos] = 0
        return logits + bias

    head.forward = only_eos
    try:
        out = generator.generate(PROMPTS[:2], SamplingSettings(max_new_tokens=4, batch_size=2))
    finally:
        head.forward = original
    assert [samples[0].num_tokens for samples in out] == [1, 1]
    assert [samples[0].text for samples in out] == ["", ""]


def test_load_tokenizer_reads_the_model_directory(tiny_model_dir, tmp_path):
    from components.generation import load_tokenizer

    tokenizer = load_tokenizer(ModelSettings(model=str(tiny_model_dir)), tmp_path)
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.chat_template


def _stop_inside(generator, text: str) -> str | None:
    """Two decoded tokens with letters, first met after the third token and before the last two; none holding a
    replacement character (a token of part of a UTF-8 character decodes to U+FFFD, which no generated text holds
    as such, so it cannot be a stop string)."""
    ids = generator.tokenizer(text, add_special_tokens=False)["input_ids"]
    decode = generator.tokenizer.decode
    for k in range(3, len(ids) - 2):
        piece = decode(ids[k:k + 2])
        if any(c.isalpha() for c in piece) and "\ufffd" not in piece and piece not in decode(ids[:k + 1]):
            return piece
    return None


def test_stop_strings_end_a_sample_early_and_count_only_generated_tokens(generator):
    # seeded sampling (greedy on random weights repeats one token): the same draws up to the stop
    for seed in range(20):
        sampling = SamplingSettings(temperature=1.0, seed=seed, max_new_tokens=16, batch_size=2)
        free = generator.generate(PROMPTS[:2], sampling)
        stop = _stop_inside(generator, free[0][0].text)
        if stop:
            break
    assert stop, "no usable stop string in 20 seeds"
    full = free[0][0]

    stopped = generator.generate(PROMPTS[:2], sampling, stop=[stop])

    first = stopped[0][0]
    assert first.num_tokens < full.num_tokens
    assert stop in first.text and full.text.startswith(first.text)
    # the other prompt of the batch ran on until it met the stop string, EOS or its budget
    other = stopped[1][0]
    assert stop in other.text or other == free[1][0]
    if other.num_tokens > first.num_tokens:  # the batch ran on: the stopped sample was padded
        assert first.num_tokens <= full.num_tokens - 2  # and its padding is not counted
