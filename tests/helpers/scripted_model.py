"""A tiny causal LM whose next token depends only on the current one, wired to write given continuations.

Built from a config like ``tiny_model``: the transformer layers contribute nothing
(attention and MLP output projections are zero), so the final hidden state is the
normalized embedding of the last token; the chain's tokens get orthogonal
embeddings and the (untied) output layer maps each to its successor with a large
margin. Prompt ``p`` whose last token starts a chain is then continued with that
chain's text and EOS, under greedy decoding or sampling at any usual temperature:
a real transformers model that trl trains, with rollouts a test can predict.
"""

from __future__ import annotations

from pathlib import Path

MARGIN = 20.0


def successors(tokenizer, chains: dict[int, str]) -> dict[int, int]:
    """``token -> next token`` for every chain (start token -> its continuation's tokens -> EOS)."""
    nxt: dict[int, int] = {}
    for start, text in chains.items():
        ids = [start, *tokenizer(text, add_special_tokens=False)["input_ids"], tokenizer.eos_token_id]
        for a, b in zip(ids, ids[1:]):
            if nxt.setdefault(a, b) != b:
                raise ValueError(f"token {a} would need two successors ({nxt[a]} and {b}); change the texts")
    return nxt


def build_scripted_model(out_dir: str | Path, chains: dict[int, str], seed: int = 0) -> Path:
    """Write the model and the tiny tokenizer to ``out_dir``; ``chains``: last prompt token id -> continuation."""
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig, Qwen2Config

    from tests.helpers.tiny_model import build_tokenizer

    tokenizer = build_tokenizer()
    nxt = successors(tokenizer, chains)
    hidden = 64
    tokens = sorted(set(nxt) | set(nxt.values()))
    if len(tokens) > hidden:
        raise ValueError(f"{len(tokens)} chain tokens do not fit {hidden} orthogonal directions")
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=128, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=1024,
                         tie_word_embeddings=False, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, bos_token_id=None, torch_dtype="float32")
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        embeddings, head = model.model.embed_tokens.weight, model.lm_head.weight
        head.zero_()
        for index, token in enumerate(tokens):
            embeddings[token].zero_()
            embeddings[token, index] = 1.0
        for a, b in nxt.items():
            head[b, tokens.index(a)] = MARGIN
    model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id,
                                               pad_token_id=tokenizer.pad_token_id, do_sample=False)
    out_dir = Path(out_dir)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir
