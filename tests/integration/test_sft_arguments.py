"""The AdaMame SFT defaults reach trl's SFTConfig and peft's LoraConfig (imports trl: ~10-25 s, so not a unit test)."""

from __future__ import annotations

from components.config import SFTSettings
from components.training.sft import lora_config, training_arguments


def test_adamame_defaults_reach_trl_and_peft(tmp_path):
    sft = SFTSettings()
    args = training_arguments(sft, tmp_path, use_cpu=True)
    assert (args.learning_rate, args.lr_scheduler_type.value, args.warmup_steps) == (2e-4, "cosine", 0.1)
    assert args.use_cpu and args.report_to == [] and args.max_length == 1024
    lora = lora_config(sft)
    assert (lora.r, lora.lora_alpha, lora.target_modules) == (8, 16, "all-linear")
