"""GPU memory and GPU-hours of a stage, estimated from token counts and the table ``throughput.yaml``.

An estimate, and labelled as one wherever it is shown: tokens are upper bounds
(every completion at its ``max_new_tokens``), generation runs at the published
batch throughput of the table (a low and a high figure per GPU, scaled by the
model's size), training at a range of model-FLOPs utilization. Each figure is a
(low, high) pair so the plan prints a range, not one number. Written here because
neither vLLM nor trl predicts a run's duration before it starts.

Memory: the weights (parameters × bytes of the dtype); for vLLM, the share of the
GPU it reserves (``gpu_memory_utilization``), what is left of it for the KV cache
after its copy of the weights, and how many tokens of KV cache that holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from components.planning.decode_bound import DecodeBound, bound_for, capped
from components.planning.models import ModelFacts

TABLE = Path(__file__).with_name("throughput.yaml")
DEFAULT_GPU = "H100-80GB"


@lru_cache(maxsize=1)
def throughput_table() -> dict:
    """``throughput.yaml``: per-GPU memory, peak and decode figures, and the MFU range."""
    return yaml.safe_load(TABLE.read_text(encoding="utf-8"))


def gpu_names() -> list[str]:
    return sorted(throughput_table()["gpus"])


def gpu(name: str) -> dict:
    """One GPU's row; ``ValueError`` naming the known ones."""
    table = throughput_table()["gpus"]
    if name not in table:
        raise ValueError(f"unknown GPU {name!r} in the throughput table (known: {', '.join(sorted(table))})")
    return table[name]


@dataclass(frozen=True)
class Hours:
    """A (low, high) range of GPU-hours, spent on ``gpus`` GPUs at once (wall-clock: GPU-hours / ``gpus``).

    ``uncapped``: the range a generation would take at the published batch rates, before the
    decode bound caps them (``None``: the same as ``low, high``, nothing was capped).

    >>> total = Hours(1.0, 2.0, uncapped=(0.5, 1.0)) + Hours(3.0, 4.0)
    >>> total.gpu_hours, total.uncapped_hours
    ((4.0, 6.0), (3.5, 5.0))
    """

    low: float
    high: float
    gpus: int = 1
    uncapped: tuple[float, float] | None = None

    def __add__(self, other: "Hours") -> "Hours":
        (low, high), (other_low, other_high) = self.uncapped_hours, other.uncapped_hours
        uncapped = None if self.uncapped is None and other.uncapped is None else (low + other_low, high + other_high)
        return Hours(self.low + other.low, self.high + other.high, max(self.gpus, other.gpus), uncapped)

    @property
    def gpu_hours(self) -> tuple[float, float]:
        return self.low, self.high

    @property
    def uncapped_hours(self) -> tuple[float, float]:
        """The range before the decode bound capped the generation rates."""
        return self.uncapped if self.uncapped is not None else (self.low, self.high)

    def text(self) -> str:
        """``120.1–294.4 GPU-hours`` (with the wall-clock range when several GPUs share the work)."""
        span = _span(self.low, self.high)
        if self.gpus == 1:
            return f"{span} GPU-hours (1 GPU)"
        return f"{span} GPU-hours ({self.gpus} GPUs: {_wall_span(self.low / self.gpus, self.high / self.gpus)})"


def _span(low: float, high: float) -> str:
    low_text, high_text = _hours(low), _hours(high)
    return low_text if low_text == high_text else f"{low_text}–{high_text}"


def _wall_span(low: float, high: float) -> str:
    """A wall-clock range with its unit: ``h`` once when both ends are hours, each end's own unit otherwise.

    >>> _wall_span(2.5, 5.0), _wall_span(0.25, 0.5), _wall_span(0.5, 2.25)
    ('2.5–5.0 h', '15 min–30 min', '30 min–2.2 h')
    """
    if low >= 1:
        return f"{_span(low, high)} h"
    return _span(low, high) if high < 1 else f"{_hours(low)}–{_hours(high)} h"


def _hours(value: float) -> str:
    """Hours with one decimal, minutes below an hour.

    >>> _hours(12.34), _hours(0.5), _hours(0.001)
    ('12.3', '30 min', '<1 min')
    """
    return f"{value:,.1f}" if value >= 1 else f"{value * 60:,.0f} min" if value >= 1 / 60 else "<1 min"


def generation_hours(tokens: int | None, facts: ModelFacts, gpu_name: str, gpus: int = 1,
                     bound: DecodeBound | None = None) -> Hours | None:
    """GPU-hours to generate ``tokens`` with the model, ``gpus`` GPUs each generating its share.

    The published rates scaled to the model's size, each capped by ``bound`` (the rate the
    sequences its KV cache holds at once allow, ``components.planning.decode_bound``).
    """
    if tokens is None or facts.parameters is None:
        return None
    decode = gpu(gpu_name)["decode"]
    published = {end: decode[end]["tokens_per_s"] * float(decode[end]["reference_parameters"]) / facts.parameters
                 for end in ("low", "high")}
    rate = capped(published, bound)
    uncapped = None if rate == published else (tokens / published["high"] / 3600, tokens / published["low"] / 3600)
    return Hours(tokens / rate["high"] / 3600, tokens / rate["low"] / 3600, gpus, uncapped)


def decode_bound_of(model: Any, facts: ModelFacts, dtype: str, gpu_name: str, max_new_tokens: int) -> DecodeBound | None:
    """``model``'s bandwidth-bound decode rate on ``gpu_name`` (``None`` off vLLM or without its geometry)."""
    return bound_for(model, facts, dtype, gpu(gpu_name), throughput_table(), max_new_tokens)


def training_passes(*, lora: bool, checkpointing: bool, reference: bool = False, old_policy: bool = False) -> int:
    """Forward-pass equivalents per trained token (see ``throughput.yaml``)."""
    return 1 + (1 if lora else 2) + int(checkpointing) + int(reference) + int(old_policy)


def training_hours(tokens: int | None, facts: ModelFacts, passes: int, gpu_name: str, gpus: int) -> Hours | None:
    """GPU-hours to train on ``tokens`` tokens at 2 × parameters FLOPs per token and pass, on ``gpus`` GPUs."""
    if tokens is None or facts.parameters is None:
        return None
    mfu, peak = throughput_table()["mfu"], gpu(gpu_name)["bf16_tflops"] * 1e12
    flops = 2 * facts.parameters * passes * tokens
    return Hours(flops / (peak * mfu["high"]) / 3600, flops / (peak * mfu["low"]) / 3600, gpus)


def memory_lines(facts: ModelFacts, dtype: str, gpu_name: str, vllm_share: float | None,
                 sequence_tokens: int | None = None, bound: DecodeBound | None = None) -> list[tuple[str, str]]:
    """The weights, and for vLLM its reserved share, KV-cache room, how many full sequences fit in it
    and the decode rate the sequences of this generation allow (``bound``)."""
    weights = facts.weights_gib(dtype)
    if weights is None:
        return [("GPU memory", f"not estimated: {facts.source}")]
    lines = [("weights", f"{weights:,.1f} GiB ({facts.parameters / 1e9:,.2f}B parameters, {dtype})")]
    if vllm_share is None:
        return lines
    reserved = vllm_share * gpu(gpu_name)["memory_gib"]
    free, per_token = reserved - weights, facts.kv_bytes_per_token(dtype)
    text = f"{reserved:,.1f} GiB of {gpu(gpu_name)['memory_gib']} (gpu_memory_utilization {vllm_share:g})"
    if per_token is None:
        return [*lines, ("vLLM reserves", text)]
    if free <= 0:
        return [*lines, ("vLLM reserves", f"{text}: less than its copy of the weights, no room for a KV cache")]
    tokens = int(free * 2**30 / per_token)
    fits = f", {tokens // sequence_tokens:,} sequences of {sequence_tokens:,} tokens" if sequence_tokens else ""
    lines += [("vLLM reserves", text),
              ("KV cache", f"{free:,.1f} GiB = {tokens:,} tokens at {per_token / 1024:,.0f} KiB per token{fits}")]
    return [*lines, ("decode bound", bound.text())] if bound is not None else lines
