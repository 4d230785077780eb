"""Full-parameter SFT and GRPO (``lora: null``) on the tiny model: every weight moves, the artifact is a full model.

Two optimizer steps each, through the training entry points the trainer process runs
(``components.training.sft.train``, ``components.training.grpo.train``). SFT trains the
tiny random model. GRPO trains the forking scripted model (``tests.helpers.grpo_vllm``:
a tiny model that writes one of two answers about half and half, one rewarded by PCS),
because a random model gives every rollout the same reward, hence no gradient; it runs
with a KL term and PCS's reference reset at a threshold every positive KL exceeds, so the
reset at step 2 copies the policy into trl's reference model; the test compares the
reference's tensors with the policy's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

ROWS = [
    {"id": "q0", "lang": "fr", "gold": "13", "question": "Janet a 16 œufs et en vend 3. Combien en reste-t-il ?"},
    {"id": "q1", "lang": "ja", "gold": "13", "question": "ジャネットは卵を16個持っていて、3個売ります。残りは？"},
    {"id": "q2", "lang": "pt", "gold": "13", "question": "Janet tem 16 ovos e vende 3. Quantos restam?"},
    {"id": "q3", "lang": "en", "gold": "13", "question": "Janet has 16 eggs and sells 3. How many are left?"},
]
MODEL = {"device": "cpu", "dtype": "float32"}


def _weights(directory: Path) -> dict:
    from safetensors.torch import load_file

    files = sorted(directory.glob("model*.safetensors"))
    assert files, f"{directory}: no full model weights"
    return {key: tensor for path in files for key, tensor in load_file(str(path)).items()}


def _assert_full_model_changed(saved: Path, original: Path) -> None:
    assert not (saved / "adapter_config.json").exists() and not (saved / "adapter_model.safetensors").exists()
    assert (saved / "config.json").is_file() and (saved / "tokenizer_config.json").is_file()
    before, after = _weights(original), _weights(saved)
    assert set(after) == set(before)
    unchanged = [key for key in before if torch.equal(before[key], after[key])]
    assert unchanged == []  # every tensor of the model was trained, not an adapter


def test_full_parameter_sft_trains_every_weight(tiny_model_dir, tmp_path):
    import pandas as pd

    from components.settings import SFTSettings
    from components.training import sft
    from components.training.runner import TrainingJob

    rows = [{"prompt": r["question"], "completion": f"<think>16 - 3 = 13</think> \\boxed{{13}}"} for r in ROWS]
    data = tmp_path / "sft.parquet"
    pd.DataFrame(rows).to_parquet(data)
    section = SFTSettings(model={"model": str(tiny_model_dir), **MODEL}, lora=None, max_steps=2, learning_rate=1e-3,
                          per_device_train_batch_size=2, save_steps=1, warmup_ratio=0.0, accelerate_config=None)
    job = TrainingJob(stage="sft", sft=section, model=str(tiny_model_dir), dataset=str(data))
    result = sft.train(job, tmp_path / "out")
    assert result["global_step"] == 2 and result["adapter_dir"] is None and result["weights"] == "full"
    _assert_full_model_changed(Path(result["full_model_dir"]), tiny_model_dir)


def test_full_parameter_bf16_sft_on_one_process_keeps_fp32_master_weights(tiny_model_dir, tmp_path):
    """bf16 weights trained in full on one process load in float32 and train under bf16 autocast, so one AdamW
    step at lr 1e-5 (each weight moves by about 1e-5) moves nearly every weight. Stored in bf16 the same update
    would mostly round away: bf16 keeps 8 significant bits, so near |w| = 0.02 (the tiny model's init scale) its
    spacing is 2^-13 ~ 1.2e-4 and any change under half of it is lost; only weights under 2^-8 in size (and the
    zero biases) keep a 1e-5 change (computed below from the trained deltas)."""
    import pandas as pd

    from components.settings import SFTSettings
    from components.training import sft
    from components.training.runner import TrainingJob

    rows = [{"prompt": r["question"], "completion": "<think>16 - 3 = 13</think> \\boxed{13}"} for r in ROWS]
    data = tmp_path / "sft.parquet"
    pd.DataFrame(rows).to_parquet(data)
    section = SFTSettings(model={"model": str(tiny_model_dir), "device": "cpu", "dtype": "bfloat16"}, lora=None,
                          max_steps=1, learning_rate=1e-5, per_device_train_batch_size=4, save_steps=100,
                          warmup_ratio=0.0, accelerate_config="cpu")
    job = TrainingJob(stage="sft", sft=section, model=str(tiny_model_dir), dataset=str(data))
    result = sft.train(job, tmp_path / "out")
    assert (result["bf16"], result["weights_dtype"]) == (True, "float32")  # autocast over fp32 master weights
    loaded = {key: tensor.to(torch.bfloat16) for key, tensor in _weights(tiny_model_dir).items()}  # as trained from
    trained = _weights(Path(result["full_model_dir"]))
    assert {str(t.dtype) for t in trained.values()} == {"torch.float32"}
    total = sum(t.numel() for t in loaded.values())
    moved = sum(int((trained[k] != loaded[k].float()).sum()) for k in loaded) / total
    kept_in_bf16 = sum(int((trained[k].to(torch.bfloat16) != loaded[k]).sum()) for k in loaded) / total
    print(f"one step at lr 1e-5: {moved:.3f} of the weights moved; stored in bf16, {kept_in_bf16:.3f} would have")
    assert kept_in_bf16 < 0.5 < 0.9 < moved  # measured here: 0.25 (small weights, zero biases) against 1.00


def test_full_parameter_grpo_resets_reference_to_policy(tmp_path, monkeypatch):
    from components.settings import GRPOStageSettings
    from components.training import callbacks, grpo
    from components.training.runner import TrainingJob
    from tests.helpers.grpo_vllm import PCS, forking_setup

    (tmp_path / "policy").mkdir()
    setup = forking_setup(tmp_path / "policy")
    model_dir = setup["model"]
    section = GRPOStageSettings(
        model={"model": str(model_dir), "chat": True, **MODEL}, dataset=str(setup["data"]), lora=None,
        rewards=[PCS], prompt={"style": "plain"}, max_steps=2, per_device_train_batch_size=8, learning_rate=1e-2,
        beta=0.5, kl_reset={"enabled": True, "threshold": 1e-9}, save_steps=1, audit={"enabled": False},
        sampling={"n": 8, "temperature": 1.0, "max_new_tokens": 16, "seed": 0}, accelerate_config=None)
    job = TrainingJob(stage="grpo", grpo=section, model=str(model_dir), dataset=str(setup["data"]))
    copies = []
    real_copy = callbacks.copy_policy_into_reference

    def recording_copy(model, reference):  # the real copy, then a snapshot of both sides to compare
        real_copy(model, reference)
        copies.append(({k: v.clone() for k, v in model.state_dict().items()},
                       {k: v.clone() for k, v in reference.state_dict().items()}))

    monkeypatch.setattr(callbacks, "copy_policy_into_reference", recording_copy)
    result = grpo.train(job, tmp_path / "out")

    assert result["global_step"] == 2 and result["adapter_dir"] is None and result["weights"] == "full"
    assert result["reference_resets"] >= 1  # a positive KL at step 2 exceeds the threshold
    assert len(copies) == result["reference_resets"]
    policy, reference = copies[-1]
    assert set(policy) == set(reference)
    assert all(torch.equal(policy[key], reference[key]) for key in policy)  # the reference is the policy
    original = _weights(model_dir)
    assert any(not torch.equal(reference[key], original[key]) for key in original)  # ... a trained one
    _assert_full_model_changed(Path(result["full_model_dir"]), model_dir)
    checkpoint = tmp_path / "out" / "trainer" / "checkpoint-2"
    assert (checkpoint / callbacks.REFERENCE_WEIGHTS).is_file()  # a resume restores the reset reference
    history = json.loads((Path(result["full_model_dir"]) / callbacks.RESETS_FILE).read_text())["history"]
    assert [entry["kl"] > 1e-9 for entry in history] == [True] * len(history)
