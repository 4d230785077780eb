"""``lora: null`` (every weight trained): what the settings accept and refuse, and how the stages hand the full
model on (the SFT model a GRPO stage trains, the weights the recipe evaluates and registers)."""

from __future__ import annotations

import pytest

from components.config import load_profile
from components.settings import GRPOStageSettings, ModelSettings, ProfileError, SFTSettings

PROFILE = "profiles/cpu-demo.yaml"


def test_lora_null_trains_all_weights_in_both_trainer_sections():
    assert SFTSettings(lora=None).lora is None
    assert GRPOStageSettings(model={"model": "m"}, dataset="d.jsonl", lora=None).lora is None
    assert load_profile(PROFILE, ["sft.lora=null", "grpo.lora=null"]).grpo.lora is None


def test_merge_and_registry_merged_are_refused_without_an_adapter():
    with pytest.raises(ValueError, match="merge is read only with LoRA"):
        SFTSettings(lora=None, merge=True)
    with pytest.raises(ProfileError, match="registry.merged with grpo.lora null"):
        load_profile(PROFILE, ["grpo.lora=null", "registry.merged=true"])


def _sft_outputs(full: bool):
    from runtime.artifacts import ArtifactRef
    from runtime.outputs import ModelRef, SFTOutputs, TrainedRun

    trained = TrainedRun(run=ArtifactRef("/runs/sft", "f"), adapter=None if full else "/runs/sft/adapter",
                         full_model="/runs/sft/model" if full else None)
    base = ModelRef(tag="base", model=ModelSettings(model="Qwen/Qwen3-4B"), fingerprint="b")
    return SFTOutputs(trained=trained, base=base)


@pytest.mark.parametrize(("full", "kind", "weights"), [(True, "full", "/runs/sft/model"),
                                                        (False, "adapter", "/runs/sft/adapter")])
def test_sft_outputs_name_the_full_model_or_the_adapter(full, kind, weights):
    from flows.recipe_plan import trained_model

    sft = _sft_outputs(full)
    assert (sft.kind, sft.weights, sft.trained.full) == (kind, weights, full)
    run_as = trained_model(ModelSettings(model="Qwen/Qwen3-4B"), sft.base, sft.weights, sft.kind)
    assert (run_as.model, run_as.adapter) == (("/runs/sft/model", None) if full else ("Qwen/Qwen3-4B", weights))


def test_grpo_after_full_sft_trains_the_sft_model_itself():
    from flows.grpo import stage_section

    section = GRPOStageSettings(model={"model": "Qwen/Qwen3-4B"}, dataset="d.jsonl", lora=None)
    model = stage_section(section, None, _sft_outputs(True)).model
    assert (model.model, model.adapter) == ("/runs/sft/model", None)
    model = stage_section(section, None, _sft_outputs(False)).model
    assert (model.model, model.adapter) == ("Qwen/Qwen3-4B", "/runs/sft/adapter")

