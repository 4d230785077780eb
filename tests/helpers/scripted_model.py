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
    from tests.helpers.tiny_model import build_tokenizer

    tokenizer = build_tokenizer()
    nxt = successors(tokenizer, chains)
    tokens = sorted(set(nxt) | set(nxt.values()))

    def fill(embeddings, head) -> None:
        for index, token in enumerate(tokens):
            embeddings[token, index] = 1.0
        for a, b in nxt.items():
            head[b, tokens.index(a)] = MARGIN

    return _write_model(out_dir, tokenizer, tokens, fill, seed)


def build_forking_model(out_dir: str | Path, fork_token: int, first: str, second: str, *, gap: float = 0.2,
                        seed: int = 0) -> Path:
    """A scripted model that continues ``fork_token`` with ``first`` or ``second`` (then EOS), nearly a coin toss.

    After ``fork_token`` the first token of ``first`` gets a logit ``gap`` above that of ``second``'s
    and every other token a logit far below: greedy decoding writes ``first``, sampling at
    temperature 1 writes it with probability sigmoid(gap) (0.55 for 0.2). One more orthogonal
    direction of the residual stream, the *lever*, raises the logit of ``second``'s first token and
    lowers ``first``'s; nothing in the weights writes along it, so only training moves it. A
    policy-gradient step that rewards ``second`` pushes the LoRA deltas of the attention and MLP
    output projections along the lever, and greedy decoding switches to ``second``: a policy change
    a test reads from the generated text.

    The two candidates' logits are small numbers and every weight is a small multiple of a power of
    two, so the model means the same in bfloat16 (vLLM's CPU build runs a float32 checkpoint in
    bfloat16): ``gap`` is not lost in the rounding of a large logit. The chain tokens' embeddings
    also hold a *floor* direction whose output weight is ``-MARGIN`` for every token except the two
    candidates: that keeps the rest of the vocabulary out of reach at the fork.
    """
    from tests.helpers.tiny_model import build_tokenizer

    tokenizer = build_tokenizer()
    starts, nxt = [], {}
    for text in (first, second):
        ids = [*tokenizer(text, add_special_tokens=False)["input_ids"], tokenizer.eos_token_id]
        starts.append(ids[0])
        for a, b in zip(ids, ids[1:]):
            if nxt.setdefault(a, b) != b or a == fork_token:
                raise ValueError(f"token {a} would need two successors; change the texts")
    if starts[0] == starts[1]:
        raise ValueError("the two continuations must start with different tokens")
    tokens = sorted(set(nxt) | set(nxt.values()) | {fork_token})
    floor, lever = len(tokens), len(tokens) + 1  # directions no token's own embedding uses

    def fill(embeddings, head) -> None:
        scale = (embeddings.shape[1] / 2) ** 0.5  # RMS norm of a vector with two ones: times sqrt(hidden / 2)
        for index, token in enumerate(tokens):
            embeddings[token, index] = embeddings[token, floor] = 1.0
        head[:, floor] = -MARGIN
        for a, b in nxt.items():
            head[b, tokens.index(a)] = 2 * MARGIN  # the successor: +MARGIN net of the floor
        head[starts, floor] = 0.0
        head[starts[0], tokens.index(fork_token)] = gap / scale
        head[starts[1], lever], head[starts[0], lever] = MARGIN, -MARGIN

    return _write_model(out_dir, tokenizer, tokens, fill, seed, spare=2)


def _write_model(out_dir: str | Path, tokenizer, tokens: list[int], fill, seed: int, spare: int = 0) -> Path:
    """The one-layer model whose layers write nothing; ``fill(embeddings, head)`` sets the chain tokens' rows."""
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig, Qwen2Config

    hidden = 64
    if len(tokens) + spare > hidden:
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
        embeddings[tokens] = 0.0
        fill(embeddings, head)
    model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id,
                                               pad_token_id=tokenizer.pad_token_id, do_sample=False)
    out_dir = Path(out_dir)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir
