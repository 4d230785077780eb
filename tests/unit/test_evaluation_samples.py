"""Per-benchmark sample counts: PCS reports avg@4 on MMATH and avg@1 on MMLU-ProX in one evaluation."""

from __future__ import annotations

import pytest

from components.settings import EvaluationSettings


def section(pass_k=(1,), n=4, **mmlu) -> EvaluationSettings:
    return EvaluationSettings(sampling={"n": n, "temperature": 0.6}, scoring={"pass_k": list(pass_k)},
                              benchmarks=[{"name": "mmath"}, {"name": "mmlu_prox_math", **mmlu}])


def test_a_benchmark_may_take_its_own_sample_count():
    evaluation = section(samples=1)
    mmath, mmlu = evaluation.benchmarks
    assert evaluation.sampling_for(mmath) is evaluation.sampling
    assert evaluation.sampling_for(mmlu).n == 1
    assert evaluation.sampling_for(mmlu).model_copy(update={"n": 4}) == evaluation.sampling  # nothing else changes


def test_pass_at_k_needs_k_samples_on_every_benchmark():
    assert section(pass_k=(4,)).scoring.pass_k == [4]
    with pytest.raises(ValueError, match="pass@4 but a benchmark gets 1 sample"):
        section(pass_k=(4,), samples=1)
