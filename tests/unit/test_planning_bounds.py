"""Where the plan is a bound: a generation's rate capped by the sequences vLLM's KV cache holds at once.

Expected values worked out by hand from the formula a decode step obeys when memory bandwidth binds it
(every weight read once, plus the KV cache of every running sequence), on made-up figures and on
Qwen3-8B's geometry as its model card gives it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from components.config import load_profile
from components.planning import plan_profile
from components.planning.decode_bound import decode_bound
from components.planning.estimate import generation_hours
from components.planning.models import ModelFacts

REPO = Path(__file__).resolve().parents[2]
TABLE = {"prompt_tokens": {"value": 100}, "bandwidth_efficiency": {"low": 0.5, "high": 1.0}}
GPU = {"memory_gib": 10, "memory_bandwidth_tbps": 1.0, "max_num_seqs": 1024}
# 1e9 parameters in bf16 = 2e9 bytes; KV: 2 (keys, values) x 2 layers x 1 head x 64 dims x 2 bytes = 512 bytes/token
SMALL = ModelFacts(name="m", source="test", parameters=1e9, layers=2, kv_heads=1, head_dim=64)


def test_the_bound_worked_out_by_hand():
    bound = decode_bound(SMALL, "bfloat16", GPU, TABLE, kv_tokens=20_000, max_new_tokens=900, max_model_len=None)
    # 20,000 tokens hold 20 sequences of 100 + 900 tokens; a step reads 2e9 + 20 x (100 + 450) x 512 bytes
    step_bytes = 2e9 + 20 * 550 * 512
    assert (bound.concurrency, bound.sequence_tokens, bound.mean_context) == (20, 1000, 550)
    assert bound.tokens_per_s == pytest.approx((20 * 1e12 * 0.5 / step_bytes, 20 * 1e12 / step_bytes))


def test_concurrency_stops_at_vllms_max_num_seqs_and_at_one_sequence():
    many = decode_bound(SMALL, "bfloat16", GPU, TABLE, kv_tokens=10**9, max_new_tokens=900, max_model_len=None)
    assert many.concurrency == 1024
    assert decode_bound(SMALL, "bfloat16", GPU, TABLE, kv_tokens=999, max_new_tokens=900, max_model_len=None) is None


def test_longer_generations_decode_slower():
    rates = [decode_bound(SMALL, "bfloat16", GPU, TABLE, 200_000, length, None).tokens_per_s[1]
             for length in (1_000, 4_000, 16_000)]
    assert rates[0] > rates[1] > rates[2]


def test_the_cap_only_raises_the_hours():
    facts = ModelFacts(name="m", source="test", parameters=8.2e9, layers=36, kv_heads=8, head_dim=128)
    bound = decode_bound(facts, "bfloat16", {"memory_gib": 80, "memory_bandwidth_tbps": 3.35, "max_num_seqs": 1024}, TABLE, 92_670,
                         4096, 16384)
    free, capped = generation_hours(10**9, facts, "H100-80GB"), generation_hours(10**9, facts, "H100-80GB", bound=bound)
    assert capped.low >= free.low and capped.high >= free.high
    # 92,670 tokens hold 22 sequences of 100 + 4,096; 10**9 tokens at the bound's high rate
    step_bytes = 8.2e9 * 2 + 22 * (100 + 2048) * 147_456
    assert capped.low == pytest.approx(10**9 / (22 * 3.35e12 / step_bytes) / 3600)


def test_pcs_grpo_rollouts_are_bound_by_the_kv_cache():
    """Qwen3-8B (36 layers, 8 KV heads of 128: 144 KiB per token) colocated at 0.35 of an H100's 80 GiB."""
    plan = plan_profile(load_profile(REPO / "profiles" / "qwen3-8b-pcs-grpo.yaml"))
    grpo = next(stage for stage in plan.stages if stage.stage == "grpo")
    line = dict(grpo.memory)["decode bound"]
    kv_tokens = int((0.35 * 80 - 8.2e9 * 2 / 2**30) * 2**30 / 147_456)
    assert kv_tokens == 92_670
    assert line.startswith(f"{kv_tokens // (512 + 4096)} sequences of 4,608 tokens at once")


def test_packed_sft_steps_are_stated_as_an_upper_bound():
    """Packing turns rows into fewer max_length sequences, known only once trl tokenizes them."""
    profile = load_profile(REPO / "profiles" / "qwen3-4b-data-sft.yaml", ["sft.packing=true"])
    sft = next(stage for stage in plan_profile(profile).stages if stage.stage == "sft")
    lines = dict(sft.lines)
    assert sft.values["steps_bound"] is True
    assert f"at most {sft.values['steps_per_epoch']:,} steps" in lines["packing"]
    unpacked = next(s for s in plan_profile(load_profile(REPO / "profiles" / "qwen3-4b-data-sft.yaml")).stages
                    if s.stage == "sft")
    assert "packing" not in dict(unpacked.lines)
