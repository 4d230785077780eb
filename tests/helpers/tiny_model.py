"""A tiny Qwen2-style causal LM built from a config, for tests (no hub access).

Hidden size 64, 2 layers, 2 heads of dimension 32 (vLLM's CPU attention needs
head_dim >= 32), a byte-level BPE tokenizer trained with ``tokenizers`` on a few
multilingual lines in milliseconds, and a ChatML chat template with the
``<think>`` tags reasoning models use. Random weights: tests assert mechanics,
never content.
"""

from __future__ import annotations

from pathlib import Path

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}{% endif %}"
)

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]

CORPUS = [
    "Janet has 16 eggs and sells 3 of them at the market. The answer is 13.",
    "Janet a 16 œufs et en vend 3 au marché. La réponse est 13.",
    "Janet tiene 16 huevos y vende 3 en el mercado. La respuesta es 13.",
    "Janet hat 16 Eier und verkauft 3 davon auf dem Markt. Die Antwort lautet 13.",
    "ジャネットは卵を16個持っていて、3個を市場で売ります。答えは13です。",
    "珍妮特有16个鸡蛋，在市场上卖了3个。答案是13。",
    "เจเน็ตมีไข่ 16 ฟองและขายไป 3 ฟองที่ตลาด คำตอบคือ 13",
    "У Джанет 16 яиц, она продаёт 3 на рынке. Ответ: 13.",
    "A Janet tem 16 ovos e vende 3 no mercado. A resposta é 13.",
    "Let me think step by step. First, 16 - 3 = 13, so \\boxed{13}.",
    "Réfléchissons étape par étape. D'abord 16 - 3 = 13, donc \\boxed{13}.",
    "<think> reasoning </think> final answer \\boxed{42} 0 1 2 3 4 5 6 7 8 9 + - * / = ( ) { }",
]


def build_tokenizer(vocab_size: int = 600):
    """Train a byte-level BPE tokenizer and wrap it as a transformers fast tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(CORPUS * 4, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token=None,
        additional_special_tokens=["<|im_start|>"],
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.padding_side = "left"
    return fast


def build_tiny_model(out_dir: str | Path, seed: int = 0) -> Path:
    """Write a tiny random Qwen2 model and its tokenizer to ``out_dir``; return the path."""
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig, Qwen2Config

    out_dir = Path(out_dir)
    tokenizer = build_tokenizer()
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=1024,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
        torch_dtype="float32",
    )
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, do_sample=False
    )
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir


def byte_fragment_tokens(tokenizer) -> list[int]:
    """Token ids that do not decode to whole characters on their own (byte-level BPE pieces)."""
    return [i for i in range(len(tokenizer)) if "\ufffd" in tokenizer.decode([i])]


def whole_character_variant(src: str | Path, out_dir: str | Path, *, std: float | None = None, seed: int = 0) -> Path:
    """A copy of a tiny model that never generates a byte-fragment token; return its path.

    Engines detokenize fragments differently (vLLM's incremental detokenizer holds back text
    that ends in an incomplete character; transformers' decode writes U+FFFD), and which
    fragments a random model picks changes with the CPU's kernels, so text comparisons across
    backends run on this variant. The fragments' rows of the tied embedding are zeroed: their
    logit is then 0, below the largest random logit of the whole-character tokens. ``std``
    first redraws every matrix with that standard deviation (larger weights vary the output).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(src)
    model = AutoModelForCausalLM.from_pretrained(src, dtype=torch.float32)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        if std is not None:
            for parameter in model.parameters():
                if parameter.dim() == 2:
                    parameter.copy_(torch.randn(parameter.shape, generator=generator) * std)
        model.get_input_embeddings().weight[byte_fragment_tokens(tokenizer)] = 0.0
    out_dir = Path(out_dir)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir
