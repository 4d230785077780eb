"""PCS's KL-triggered reference reset on a LoRA policy (``ReferenceResetCallback``).

trl's reference under PEFT is the model with adapters disabled; after a reset
(merge the adapter into the base weights, fresh adapter with B = 0) policy and
reference must give identical logits, and the policy itself must not move.
"""

from __future__ import annotations

import copy
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")


def _lora_model(seed: int = 0):
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    config = Qwen2Config(vocab_size=64, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=32, max_position_embeddings=64)
    model = get_peft_model(Qwen2ForCausalLM(config), LoraConfig(r=4, lora_alpha=8, target_modules="all-linear"))
    model.eval()
    return model


def _train_adapter(model, seed: int = 1) -> None:
    """Stand-in for training: give every LoRA B a non-zero value."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.copy_(torch.randn(param.shape, generator=generator) * 0.5)


def _logits(model, reference: bool = False):
    ids = torch.arange(1, 17).unsqueeze(0)
    with torch.no_grad():
        if reference:
            with model.disable_adapter():
                return model(input_ids=ids).logits
        return model(input_ids=ids).logits


def _state(step: int = 7):
    return SimpleNamespace(global_step=step, is_world_process_zero=True)


@pytest.mark.parametrize(("kl", "fires"), [(None, False), (float("nan"), False), (0.0, False), (0.2, False),
                                            (0.2000001, True), (5.0, True)])
def test_trigger_is_strictly_above_threshold(kl, fires):
    from components.training.callbacks import ReferenceResetCallback

    assert ReferenceResetCallback(0.2).should_reset(kl) is fires


def test_reset_fires_exactly_above_threshold_and_makes_policy_equal_reference():
    from components.training.callbacks import ReferenceResetCallback

    model = _lora_model()
    _train_adapter(model)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    for param in optimizer.param_groups[0]["params"]:
        optimizer.state[param] = {"step": torch.tensor(3.0)}
    policy_before = _logits(model)
    assert not torch.allclose(policy_before, _logits(model, reference=True))

    callback = ReferenceResetCallback(0.2, seed=0)
    callback.on_log(None, _state(), None, logs={"kl": 0.2}, model=model, optimizer=optimizer)
    assert callback.resets == 0 and not torch.allclose(_logits(model), _logits(model, reference=True))

    callback.on_log(None, _state(), None, logs={"kl": 0.25}, model=model, optimizer=optimizer)
    assert callback.resets == 1 and callback.history == [{"step": 7, "kl": 0.25}]
    assert torch.equal(_logits(model), _logits(model, reference=True))  # reference := policy
    assert torch.allclose(_logits(model), policy_before, atol=1e-5)  # the policy did not move
    lora_b = [p for n, p in model.named_parameters() if "lora_B" in n]
    assert lora_b and all(torch.count_nonzero(p) == 0 for p in lora_b)  # fresh adapter
    assert all(optimizer.state.get(p) is None for n, p in model.named_parameters() if "lora_" in n)
    assert callback.metrics() == {"curriculum/reference_resets": 1.0}


def test_saved_resets_replay_onto_fresh_base_weights(tmp_path):
    from components.training.callbacks import ReferenceResetCallback

    model = _lora_model()
    pristine = copy.deepcopy(model)
    callback = ReferenceResetCallback(0.2, seed=0)
    for round_ in range(2):  # two resets, with "training" in between
        _train_adapter(model, seed=round_ + 1)
        callback.on_log(None, _state(round_), None, logs={"kl": 0.3}, model=model)
    _train_adapter(model, seed=9)  # the adapter at checkpoint time
    callback.save(tmp_path)

    resumed = pristine  # base weights as loaded from disk, adapter as loaded from the checkpoint
    resumed.load_state_dict(
        {k: v for k, v in model.state_dict().items() if "lora_" in k}, strict=False)
    restored = ReferenceResetCallback(0.2, resume_from=tmp_path)
    restored.on_train_begin(None, _state(2), None, model=resumed)
    assert restored.resets == 2
    for (name, a), (_, b) in zip(model.state_dict().items(), resumed.state_dict().items()):
        assert torch.equal(a, b), name
    assert torch.equal(_logits(resumed, reference=True), _logits(model, reference=True))


def test_a_lora_checkpoint_after_a_reset_holds_the_resets_and_no_reference_model(tmp_path):
    """The GRPO entry hands every run ``reference=lambda: trainer.ref_model``; for a LoRA policy trl keeps no
    separate reference (``ref_model`` is None: the adapter-disabled policy is the reference), so a checkpoint
    saved after a reset writes the reset files only."""
    from components.training.callbacks import REFERENCE_WEIGHTS, RESETS_FILE, ReferenceResetCallback

    model = _lora_model()
    _train_adapter(model)
    callback = ReferenceResetCallback(0.2, seed=0, reference=lambda: None)
    callback.on_log(None, _state(), None, logs={"kl": 0.3}, model=model)
    assert callback.resets == 1
    callback.save(tmp_path, with_reference=True)
    assert (tmp_path / RESETS_FILE).is_file() and not (tmp_path / REFERENCE_WEIGHTS).exists()


def test_full_fine_tuning_is_refused():
    from components.training.callbacks import reset_reference_to_policy

    with pytest.raises(NotImplementedError):
        reset_reference_to_policy(torch.nn.Linear(2, 2))


def _full_model(seed: int):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    config = Qwen2Config(vocab_size=64, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=32, max_position_embeddings=64)
    return Qwen2ForCausalLM(config).eval()


def test_full_model_reset_copies_the_policy_into_the_reference_and_resumes_it(tmp_path):
    from accelerate import Accelerator

    from components.training.callbacks import REFERENCE_WEIGHTS, ReferenceResetCallback

    Accelerator(cpu=True)  # trl's sync reads the accelerator's state (ZeRO-3 or not), as inside a trainer
    policy, reference = _full_model(0), _full_model(1)
    policy_before = _logits(policy)
    assert not torch.allclose(policy_before, _logits(reference))
    callback = ReferenceResetCallback(0.2, reference=lambda: reference)
    callback.on_log(None, _state(), None, logs={"kl": 0.3}, model=policy)
    assert callback.resets == 1
    for (name, a), (_, b) in zip(policy.state_dict().items(), reference.state_dict().items()):
        assert torch.equal(a, b), name
    assert torch.equal(_logits(policy), policy_before)  # the policy did not move
    callback.save(tmp_path, with_reference=True)
    assert (tmp_path / REFERENCE_WEIGHTS).is_file()

    fresh_reference = _full_model(2)  # as trl builds it again when training resumes
    restored = ReferenceResetCallback(0.2, resume_from=tmp_path, reference=lambda: fresh_reference)
    restored.on_train_begin(None, _state(), None, model=policy)
    assert restored.resets == 1 and torch.equal(_logits(fresh_reference), _logits(reference))


def test_full_model_reset_needs_a_reference_model():
    from components.training.callbacks import ReferenceResetCallback

    with pytest.raises(NotImplementedError, match="beta > 0"):
        ReferenceResetCallback(0.2).on_log(None, _state(), None, logs={"kl": 0.3}, model=_full_model(0))
