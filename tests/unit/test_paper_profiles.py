"""The paper evaluation profiles hold the papers' protocols, and their CPU twins keep every switch.

Expected values are written from the papers (AdaMame §4 and appendix C; PCS "Evaluation details";
the verifier-bias paper §3-5), not read from the profiles; where a paper is silent the profile's
header says which choice was made and this table pins it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from components.config import load_profile

PROFILES = Path(__file__).resolve().parents[2] / "profiles"

PAPERS = {
    "qwen3-4b-adamame-evaluation": {
        "model": ("Qwen/Qwen3-4B", "vllm", True, True),   # model, backend, chat, thinking
        "sampling": (4, 0.6, 0.95, 8192),                 # n, temperature, top_p, max_new_tokens
        "prompt": ("instruction", "before"),
        "benchmarks": {"mgsm_rev2": (["fr", "ja", "ko", "th", "bn", "en", "es", "ru", "sw", "te", "zh", "de"], None),
                       "msvamp": (["fr", "ja", "th", "bn", "en", "es", "sw", "ru", "zh", "de"], None)},
        "scoring": ("math_verify", [1, 4], 8192, ["fr", "pt", "ja", "ko", "th"]),
    },
    "qwen3-8b-pcs-evaluation": {
        "model": ("Qwen/Qwen3-8B", "vllm", True, True),
        "sampling": (4, 0.9, 0.95, 32768),
        "prompt": ("instruction", "after"),
        "benchmarks": {"mmath": (["fr", "pt", "ja", "ko", "th"], None),
                       "mmlu_prox_math": (["fr", "pt", "ja", "ko", "th"], 1)},
        "scoring": ("trusted", [1], 32768, ["fr", "pt", "ja", "ko", "th"]),
    },
    "qwen3-8b-verifier-bias-evaluation": {
        "model": ("Qwen/Qwen3-8B", "vllm", True, True),
        "sampling": (8, 0.6, 0.95, 4096),
        "prompt": ("instruction", "after"),
        "benchmarks": {"mgsm": (["en", "ja", "zh"], None)},
        "scoring": ("trusted", [1, 8], 8192, ["ja", "zh"]),
    },
}


@pytest.mark.parametrize("name", sorted(PAPERS))
def test_paper_profile_holds_the_protocol(name):
    expected = PAPERS[name]
    evaluation = load_profile(PROFILES / f"{name}.yaml").evaluation
    model, sampling, scoring = evaluation.model, evaluation.sampling, evaluation.scoring
    assert (model.model, model.backend, model.chat, model.thinking) == expected["model"]
    assert (sampling.n, sampling.temperature, sampling.top_p, sampling.max_new_tokens) == expected["sampling"]
    assert (evaluation.prompt.style, evaluation.prompt.instruction) == expected["prompt"]
    assert {b.name: (b.languages, b.samples) for b in evaluation.benchmarks} == expected["benchmarks"]
    assert (scoring.verifier, scoring.pass_k, scoring.max_context, scoring.in_domain) == expected["scoring"]


def test_data_missing_offline_is_read_from_the_hub():
    adamame = {b.name: b for b in load_profile(PROFILES / "qwen3-4b-adamame-evaluation.yaml").evaluation.benchmarks}
    assert adamame["mgsm_rev2"].hub_languages == ["ko"]                       # MGSM-Rev2 has no Korean
    assert (adamame["msvamp"].limit, adamame["msvamp"].selection) == (250, "sample")  # the 250-problem subset
    pcs = {b.name: b for b in load_profile(PROFILES / "qwen3-8b-pcs-evaluation.yaml").evaluation.benchmarks}
    assert pcs["mmlu_prox_math"].data_dir is None                            # MMLU-ProX: the hub only


SWITCHES = ("model.chat", "model.thinking", "sampling.temperature", "sampling.top_p", "prompt", "scoring.verifier",
            "scoring.lcpr_rule", "scoring.slc_threshold", "scoring.max_context")


def _get(section, dotted: str):
    for part in dotted.split("."):
        section = getattr(section, part)
    return section


@pytest.mark.parametrize("paper, twin", [("qwen3-4b-adamame-evaluation", "cpu-adamame-evaluation"),
                                         ("qwen3-8b-pcs-evaluation", "cpu-pcs-evaluation"),
                                         ("qwen3-8b-verifier-bias-evaluation", "cpu-verifier-bias-evaluation")])
def test_cpu_twin_keeps_every_switch_and_shrinks_the_counts(paper, twin):
    full, small = (load_profile(PROFILES / f"{name}.yaml") for name in (paper, twin))
    for switch in SWITCHES:
        assert _get(small.evaluation, switch) == _get(full.evaluation, switch), switch
    assert [b.name for b in small.evaluation.benchmarks] == [b.name for b in full.evaluation.benchmarks]
    assert [b.samples is None for b in small.evaluation.benchmarks] == [
        b.samples is None for b in full.evaluation.benchmarks]
    assert 1 < small.evaluation.sampling.n <= full.evaluation.sampling.n
    assert small.evaluation.sampling.max_new_tokens < full.evaluation.sampling.max_new_tokens
    assert len(small.evaluation.scoring.pass_k) == len(full.evaluation.scoring.pass_k)
    assert (small.audit is None) == (full.audit is None)
    if full.audit is not None:
        assert small.audit.model_dump() == full.audit.model_dump()
