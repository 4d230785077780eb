"""Test-time compute (TTC): the share of the context window a completion uses (AdaMame §4,
"fraction of the maximum context length (8,192 tokens) consumed by the model's response",
after Snell et al., 2024). Two variants, named apart:

* ``ttc``: generated tokens / max context (needs the tokenizer's count, ``num_tokens``);
* ``ttc_chars``: characters / 4 / 8192, the tokenizer-free estimate comparable with AdaMame's
  tables (4 characters per token).

Values are not capped at 1.

>>> ttc_tokens(2048, 8192), ttc_chars("x" * 4096)
(0.25, 0.125)
"""

from __future__ import annotations

ADAMAME_MAX_CONTEXT = 8192
CHARS_PER_TOKEN = 4


def ttc_tokens(num_tokens: int, max_context: int) -> float:
    """Generated tokens over the maximum context length."""
    if max_context <= 0 or num_tokens < 0:
        raise ValueError(f"ttc needs num_tokens >= 0 and max_context > 0, got {num_tokens}, {max_context}")
    return num_tokens / max_context


def ttc_chars(text: str, chars_per_token: float = CHARS_PER_TOKEN,
              max_context: int = ADAMAME_MAX_CONTEXT) -> float:
    """Characters / ``chars_per_token`` / ``max_context`` (AdaMame-compatible estimate)."""
    return len(text) / chars_per_token / max_context
