"""Trainer sections: every key that is not polyreason's own is a field of trl's config, checked by trl at load.

Table-driven: a profile's section and the exact line the loader reports for it, or the trl options it yields.
The project decides some trl values (from its own keys, or from where the trainer runs): setting them as trl keys
is refused naming the key to use. Imports trl's config classes (a few seconds, once per process).
"""

from __future__ import annotations

import pytest

from components.config import load_profile_dict
from components.settings import GRPOStageSettings, ProfileError, SFTSettings
from components.settings.trainer import TRL_OPERATIONAL, TRL_RUNTIME, trl_fields

GRPO = {"model": {"model": "m"}, "dataset": "d.jsonl"}

REFUSED = [  # (section, keys, the reported line)
    ("grpo", {"lerning_rate": 1e-5},
     "grpo.lerning_rate: neither a field of this section nor of trl's GRPOConfig: GRPOConfig.__init__() got an "
     "unexpected keyword argument 'lerning_rate' (closest: learning_rate, logging_strategy)"),
    ("sft", {"num_generations": 4},
     "sft.num_generations: neither a field of this section nor of trl's SFTConfig: SFTConfig.__init__() got an "
     "unexpected keyword argument 'num_generations'"),
    ("grpo", {"num_generations": 4}, "grpo.num_generations: decided by polyreason: set sampling.n instead"),
    ("grpo", {"reward_weights": [1.0]}, "grpo.reward_weights: decided by polyreason: set rewards.N.weight instead"),
    ("grpo", {"use_vllm": True}, "grpo.use_vllm: decided by polyreason: set model.backend instead"),
    ("sft", {"output_dir": "x"}, "sft.output_dir: decided by polyreason: the trainer writes under the stage's "
                                 "artifact directory"),
    ("sft", {"bf16": True}, "sft.bf16: decided by polyreason: set model.dtype and model.device (bfloat16 weights "
                            "on CUDA train with bf16)"),
    ("sft", {"model_init_kwargs": {}}, "sft.model_init_kwargs: not usable here: polyreason loads the model itself: "
                                       "set model.dtype and model.device"),
    ("grpo", {"sync_ref_model": True}, "grpo.sync_ref_model: not usable here: trl refuses it for a LoRA policy and syncs "
                                       "on a fixed period; set kl_reset (the reference becomes the policy when the KL "
                                       "exceeds a threshold, with LoRA or all weights)"),
    ("grpo", {"learning_rate": "fast"}, "grpo.learning_rate: trl's GRPOConfig declares it float: Input should be a "
                                        "valid number, unable to parse string as a number"),
    ("sft", {"packing": "yes please"}, "sft.packing: trl's SFTConfig declares it bool: Input should be a valid "
                                       "boolean, unable to interpret input"),
    ("sft", {"loss_type": "mse"}, "sft.loss_type: trl's SFTConfig accepts 'nll', 'dft', 'chunked_nll'; got 'mse'"),
    ("grpo", {"per_device_train_batch_size": 3},
     "grpo: trl's GRPOConfig refuses these settings: generation_batch_size (3) must be divisible by num_generations "
     "(8). (num_generations is sampling.n here)"),
    ("sft", {"lr_scheduler_type": "cosin"},
     "sft: trl's SFTConfig refuses these settings: cosin is not a valid SchedulerType, please select one of "
     "['linear', 'cosine', 'cosine_with_restarts', 'polynomial', 'constant', 'constant_with_warmup', 'inverse_sqrt', "
     "'reduce_lr_on_plateau', 'cosine_with_min_lr', 'cosine_warmup_with_min_lr', 'warmup_stable_decay', 'greedy']"),
    ("grpo", {"vllm_mode": "server"}, "grpo: vllm_mode: read only when model.backend is vllm"),
    ("grpo", {"vllm_importance_sampling_correction": False},
     "grpo: vllm_importance_sampling_correction: read only when model.backend is vllm"),
    ("sft", {"warmup_steps": 5, "warmup_ratio": 0.2}, "sft: warmup_ratio and warmup_steps both set the warm-up; keep one"),
    ("grpo", {"kl_reset": {"enabled": True}, "beta": 0}, "grpo: kl_reset needs a KL term: set beta > 0 (PCS: 0.001)"),
    ("grpo", {"warmup_ratio": 0.1},  # GRPO's default schedule is constant
     "grpo: warmup_ratio 0.1 with lr_scheduler_type 'constant': transformers builds that schedule without a warm-up, "
     "so the warm-up would be ignored; choose a scheduler that warms up (e.g. constant_with_warmup, cosine) or set the "
     "warm-up to 0"),
    ("sft", {"lr_scheduler_type": "reduce_lr_on_plateau", "warmup_steps": 5},
     "sft: warmup_steps 5 with lr_scheduler_type 'reduce_lr_on_plateau': transformers builds that schedule without a "
     "warm-up, so the warm-up would be ignored; choose a scheduler that warms up (e.g. constant_with_warmup, cosine) "
     "or set the warm-up to 0"),
]


def problems(section: str, keys: dict) -> list[str]:
    body = {**GRPO, **keys} if section == "grpo" else keys
    with pytest.raises(ProfileError) as error:
        load_profile_dict({"name": "x", section: body})
    return [line.strip().removeprefix("- ") for line in str(error.value).splitlines()[1:]]


@pytest.mark.parametrize(("section", "keys", "line"), REFUSED, ids=[f"{s}-{'-'.join(k)}" for s, k, _ in REFUSED])
def test_a_trl_key_that_cannot_work_is_refused_at_load(section, keys, line):
    assert problems(section, keys) == [line]


def test_trl_key_problems_and_field_problems_are_reported_together():
    assert problems("grpo", {"lerning_rate": 1e-5, "sampling": {"n": 0}}) == [
        "grpo.lerning_rate: neither a field of this section nor of trl's GRPOConfig: GRPOConfig.__init__() got an "
        "unexpected keyword argument 'lerning_rate' (closest: learning_rate, logging_strategy)",
        "grpo.sampling.n: Input should be greater than or equal to 1",
    ]


ACCEPTED = [  # (section keys, overrides, trl options expected among the section's)
    ({}, [], {"learning_rate": 2e-4, "lr_scheduler_type": "cosine", "seed": 0, "max_length": 1024}),  # AdaMame's SFT
    ({"learning_rate": "1e-5"}, [], {"learning_rate": 1e-5}),  # YAML reads 1e-5 as a string; trl's type decides
    ({"packing": True, "packing_strategy": "bfd"}, [], {"packing": True, "packing_strategy": "bfd"}),
    ({}, ["sft.neftune_noise_alpha=5", "sft.max_steps=3"], {"neftune_noise_alpha": 5.0, "max_steps": 3}),
]


@pytest.mark.parametrize(("keys", "overrides", "expected"), ACCEPTED)
def test_trl_keys_from_a_profile_and_from_overrides(keys, overrides, expected):
    options = load_profile_dict({"name": "x", "sft": keys}, overrides).sft.trl_options
    assert {key: options[key] for key in expected} == expected


def test_grpo_options_no_code_names_are_usable():
    section = load_profile_dict({"name": "x", "grpo": {**GRPO, "loss_type": "cispo"}},
                                ["grpo.top_entropy_quantile=0.2", "grpo.mask_truncated_completions=true"]).grpo
    assert (section.loss_type, section.top_entropy_quantile, section.mask_truncated_completions) == ("cispo", 0.2, True)


def test_vllm_options_are_read_with_the_vllm_backend():
    section = GRPOStageSettings(model={"model": "m", "backend": "vllm"}, dataset="d.jsonl", vllm_mode="server",
                                vllm_server_base_url="http://127.0.0.1:8000", vllm_importance_sampling_correction=False)
    derived = section.trl_derived()
    assert (derived["use_vllm"], derived["vllm_gpu_memory_utilization"], section.vllm_mode) == (True, 0.85, "server")


def test_derived_values_come_from_the_sections_own_keys():
    section = GRPOStageSettings(model={"model": "m", "thinking": True}, dataset="d.jsonl", warmup_ratio=0.25,
                                lr_scheduler_type="constant_with_warmup",
                                sampling={"n": 4, "temperature": 0.7, "top_p": 0.9, "max_new_tokens": 32, "seed": 3},
                                rewards=[{"name": "accuracy", "weight": 0.5}, {"name": "softlc"}])
    assert section.trl_derived() == {
        "warmup_steps": 0.25, "num_generations": 4, "max_completion_length": 32, "temperature": 0.7, "top_p": 0.9,
        "seed": 3, "reward_weights": [0.5, 1.0], "chat_template_kwargs": {"enable_thinking": True}, "use_vllm": False,
        "vllm_gpu_memory_utilization": 0.85, "vllm_max_model_length": None, "log_completions": True,
    }
    assert section.model_copy(update={"rollout_table_rows": 0}).trl_derived()["log_completions"] is False  # no table
    assert SFTSettings(warmup_steps=10).trl_derived() == {}  # warmup_steps given: warmup_ratio is not used


@pytest.mark.parametrize("cls", [SFTSettings, GRPOStageSettings], ids=lambda c: c.__name__)
def test_a_section_round_trips_through_json_with_its_trl_keys(cls):
    section = cls.model_validate({**(GRPO if cls is GRPOStageSettings else {}), "weight_decay": 0.1})
    again = cls.model_validate_json(section.model_dump_json())
    assert again == section and again.trl_options["weight_decay"] == 0.1


@pytest.mark.parametrize("cls", [SFTSettings, GRPOStageSettings], ids=lambda c: c.__name__)
def test_every_trl_name_the_section_uses_is_a_field_of_trls_config(cls):
    """A trl release that renames a field shows up here, not as a silently ignored key."""
    fields = set(trl_fields(cls.TRL_CONFIG))
    named = {*cls.TRL_DEFAULTS, *cls.TRL_DERIVED, *cls.TRL_REFUSED, *TRL_RUNTIME, *TRL_OPERATIONAL}
    assert sorted(named - fields) == []
    assert sorted(set(cls.model_fields) & fields) == []  # no own field hides a trl option


def test_the_runtime_values_are_those_the_training_job_sets():
    from pathlib import Path

    from components.training.precision import Precision
    from components.training.runner import trainer_runtime

    assert set(trainer_runtime(Precision("float32", bf16=False), "cpu", Path("o"))) == set(TRL_RUNTIME)


def test_checking_a_section_sets_up_no_accelerate_state():
    """The check builds trl's config without its device set-up: a trainer built later in the same process (or a
    launched trainer process reading its job) gets the accelerate state of the machine it runs on."""
    from accelerate.state import AcceleratorState, PartialState

    PartialState._reset_state()
    AcceleratorState._reset_state()
    GRPOStageSettings(**GRPO, weight_decay=0.1)
    SFTSettings(seed=1)
    assert (PartialState._shared_state, AcceleratorState._shared_state) == ({}, {})
