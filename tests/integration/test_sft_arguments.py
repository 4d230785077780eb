"""The AdaMame SFT defaults reach trl's SFTConfig and peft's LoraConfig (imports trl: ~10-25 s, so not a unit test)."""

from __future__ import annotations

from components.settings import SFTSettings
from components.training.runner import lora_config, run_precision
from components.training.sft import training_arguments


def test_adamame_defaults_reach_trl_and_peft(tmp_path):
    sft = SFTSettings()
    args = training_arguments(sft, tmp_path, "cpu", run_precision(sft, sft.model, "cpu"))
    assert (args.learning_rate, args.lr_scheduler_type.value, args.warmup_steps) == (2e-4, "cosine", 0.1)
    assert args.use_cpu and not args.bf16 and args.report_to == [] and args.max_length == 1024
    lora = lora_config(sft.lora)
    assert (lora.r, lora.lora_alpha, lora.target_modules) == (8, 16, "all-linear")
