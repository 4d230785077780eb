"""An upper bound on vLLM's decode rate from the sequences its KV cache can hold at once.

The published batch throughputs in ``throughput.yaml`` were measured with hundreds of
concurrent ~2k-token requests. A long reasoning generation cannot reach them when the KV
cache holds only a few dozen of its sequences: decoding is then bound by memory bandwidth,
each step reading every weight once plus the KV cache of every running sequence. Neither
vLLM nor trl predicts this before a run, so it is computed here:

* concurrency ``B``: the KV cache's tokens divided by one sequence's full length (the
  prompt allowance plus ``max_new_tokens``, every completion at its maximum as the plan
  assumes elsewhere), at most vLLM's default ``max_num_seqs`` on that GPU;
* one decode step reads ``W`` bytes of weights and ``B × L̄ × kv`` bytes of KV cache,
  ``L̄`` the mean context while a completion grows (prompt + ``max_new_tokens`` / 2);
* the step lasts at least those bytes over the GPU's memory bandwidth (times the share of
  peak bandwidth decoding kernels achieve, a low and a high figure), and yields ``B`` tokens.

So ``rate ≤ B × bandwidth × efficiency / (W + B × L̄ × kv)``: an upper bound on tokens per
second (compute, scheduling and prefill only lower it), used to cap both ends of the plan's
generation range.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from components.planning.models import ModelFacts


@dataclass(frozen=True)
class DecodeBound:
    """What the KV cache allows one GPU's vLLM to decode at once, and the rate that allows."""

    concurrency: int  # sequences held in the KV cache at once
    sequence_tokens: int  # one sequence's full length: prompt allowance + max_new_tokens
    mean_context: int  # the mean context a decode step reads per sequence
    tokens_per_s: tuple[float, float]  # bandwidth-bound rate at the low and high efficiency

    def text(self) -> str:
        low, high = self.tokens_per_s
        return (f"{self.concurrency:,} sequences of {self.sequence_tokens:,} tokens at once → ≤ {low:,.0f}–{high:,.0f} "
                f"tokens/s (memory-bandwidth bound)")


def sequence_tokens(max_new_tokens: int, max_model_len: int | None, prompt_tokens: int) -> int:
    """One sequence's full length: the prompt allowance and the completion, within ``max_model_len``.

    >>> sequence_tokens(4096, 16384, 512), sequence_tokens(30720, 32768, 4096)
    (4608, 32768)
    """
    full = prompt_tokens + max_new_tokens
    return min(full, max_model_len) if max_model_len else full


def decode_bound(facts: ModelFacts, dtype: str, gpu: dict, table: dict, kv_tokens: int,
                 max_new_tokens: int, max_model_len: int | None) -> DecodeBound | None:
    """The bound for a generation of ``max_new_tokens`` with ``kv_tokens`` of KV cache; ``None`` if unknown.

    ``gpu`` is a row of the throughput table (``memory_bandwidth_tbps``, vLLM's ``max_num_seqs`` default on
    it), ``table`` the whole table (``prompt_tokens``, ``bandwidth_efficiency``).
    """
    weights, per_token = facts.weights_gib(dtype), facts.kv_bytes_per_token(dtype)
    if weights is None or per_token is None or "memory_bandwidth_tbps" not in gpu:
        return None
    length = sequence_tokens(max_new_tokens, max_model_len, int(table["prompt_tokens"]["value"]))
    concurrency = min(kv_tokens // length, int(gpu["max_num_seqs"]))
    if concurrency < 1:
        return None
    mean_context = max(length - max_new_tokens, 0) + max_new_tokens // 2
    step_bytes = weights * 2**30 + concurrency * mean_context * per_token
    bandwidth = float(gpu["memory_bandwidth_tbps"]) * 1e12
    efficiency = table["bandwidth_efficiency"]
    rates = tuple(concurrency * bandwidth * float(efficiency[end]) / step_bytes for end in ("low", "high"))
    return DecodeBound(concurrency, length, mean_context, rates)  # type: ignore[arg-type]


def capped(rate: dict[str, float], bound: DecodeBound | None) -> dict[str, float]:
    """The published ``{low, high}`` rates, each at most the bound's rate at the same end.

    >>> capped({"low": 3000.0, "high": 8000.0}, DecodeBound(20, 4608, 2560, (1400.0, 2240.0)))
    {'low': 1400.0, 'high': 2240.0}
    >>> capped({"low": 3000.0, "high": 8000.0}, None)
    {'low': 3000.0, 'high': 8000.0}
    """
    if bound is None:
        return dict(rate)
    low, high = bound.tokens_per_s
    return {"low": min(rate["low"], low), "high": min(rate["high"], high)}


def kv_tokens_of(facts: ModelFacts, dtype: str, gpu: dict, share: float | None) -> int | None:
    """Tokens of KV cache vLLM has after its copy of the weights in its share of the GPU."""
    weights, per_token = facts.weights_gib(dtype), facts.kv_bytes_per_token(dtype)
    if share is None or weights is None or per_token is None:
        return None
    free = share * float(gpu["memory_gib"]) - weights
    return int(free * 2**30 / per_token) if free > 0 else 0


def bound_for(model: Any, facts: ModelFacts, dtype: str, gpu: dict, table: dict,
              max_new_tokens: int) -> DecodeBound | None:
    """The bound for ``model`` (a vLLM model setting) generating ``max_new_tokens``; ``None`` off vLLM."""
    if getattr(model, "backend", None) not in ("vllm", "vllm-server"):
        return None
    kv_tokens = kv_tokens_of(facts, dtype, gpu, model.gpu_memory_utilization)
    if kv_tokens is None:
        return None
    return decode_bound(facts, dtype, gpu, table, kv_tokens, max_new_tokens, model.max_model_len)
