"""trl options polyreason never names reach trl's GRPOConfig in the training job, from a profile file and from the
Run form's ``key=value`` overrides, with no code of polyreason's naming them.

The profile below sets GRPO options that no settings field mirrors (trl's CISPO loss, the entropy mask of
high-entropy tokens, the exclusion of truncated completions, DAPO's upper clip) and the override adds another
(two-sided clipping); the job goes through ``job.json`` as the trainer process reads it, and trl trains one step
with them on the tiny model. Imports trl and trains (~15-30 s), hence an integration test.
"""

from __future__ import annotations

import json

import pytest

PROFILE = """
name: trl-options
grpo:
  model: {{model: {model}, device: cpu, dtype: float32}}
  dataset: {dataset}
  dataset_lang: fr
  prompt: {{style: plain}}
  sampling: {{n: 2, temperature: 1.0, max_new_tokens: 4}}
  per_device_train_batch_size: 2
  max_steps: 1
  save_steps: 1
  audit: {{enabled: false}}
  loss_type: cispo
  top_entropy_quantile: 0.2
  mask_truncated_completions: true
  epsilon_high: 0.28
"""
GIVEN = {"loss_type": "cispo", "top_entropy_quantile": 0.2, "mask_truncated_completions": True,
         "epsilon_high": 0.28, "delta": 2.0}


@pytest.fixture()
def profile_file(tiny_model_dir, tmp_path):
    data = tmp_path / "rl.jsonl"
    rows = [{"question": "Janet a 16 œufs et en vend 3. Combien en reste-t-il ?", "gold": "13"}] * 2
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    path = tmp_path / "trl-options.yaml"
    path.write_text(PROFILE.format(model=tiny_model_dir, dataset=data), encoding="utf-8")
    return path


def test_unmirrored_grpo_options_reach_trl_in_the_training_job(profile_file, tmp_path):
    from components.config import load_profile
    from components.training import grpo
    from components.training.runner import TrainingJob, read_job, write_job

    section = load_profile(profile_file, ["grpo.delta=2.0"]).grpo  # the override as the Run form passes it
    job = TrainingJob(stage="grpo", grpo=section, model=section.model.model, dataset=section.dataset)
    job = read_job(write_job(job, tmp_path / "out"))  # what the trainer process reads
    trainer, _ = grpo.build_trainer(job, tmp_path / "out", None, None)
    assert {key: getattr(trainer.args, key) for key in GIVEN} == GIVEN
    trainer.train()
    assert trainer.state.global_step == 1


def test_an_option_trl_does_not_have_is_refused_with_trls_message(profile_file):
    from components.config import load_profile
    from components.settings import ProfileError

    with pytest.raises(ProfileError) as error:
        load_profile(profile_file, ["grpo.top_entropy_quantil=0.2"])
    assert ("  - grpo.top_entropy_quantil: neither a field of this section nor of trl's GRPOConfig: "
            "GRPOConfig.__init__() got an unexpected keyword argument 'top_entropy_quantil' "
            "(closest: top_entropy_quantile") in str(error.value)
