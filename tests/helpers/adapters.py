"""LoRA adapters for tests, written as peft saves them (``adapter_config.json`` + ``adapter_model.safetensors``).

Written with safetensors directly, so the vLLM test environment (which has no
peft) can build them too. ``scale=0`` gives B = 0: the adapter changes nothing;
any other scale gives random A and B, so the adapter changes the model's outputs.
"""

from __future__ import annotations

import json
from pathlib import Path

TARGETS = ("q_proj", "v_proj")


def write_lora_adapter(model_dir: str | Path, out: str | Path, *, scale: float, seed: int = 0, r: int = 8) -> Path:
    """An adapter on the attention q/v projections of every layer of the model in ``model_dir``."""
    import torch
    from safetensors.torch import save_file

    config = json.loads((Path(model_dir) / "config.json").read_text(encoding="utf-8"))
    hidden, heads = config["hidden_size"], config["num_attention_heads"]
    head_dim = config.get("head_dim") or hidden // heads
    outputs = {"q_proj": heads * head_dim, "v_proj": config.get("num_key_value_heads", heads) * head_dim}
    generator = torch.Generator().manual_seed(seed)
    tensors = {}
    for layer in range(config["num_hidden_layers"]):
        for target in TARGETS:
            prefix = f"base_model.model.model.layers.{layer}.self_attn.{target}"
            tensors[f"{prefix}.lora_A.weight"] = torch.randn(r, hidden, generator=generator) * 0.5
            tensors[f"{prefix}.lora_B.weight"] = torch.randn(outputs[target], r, generator=generator) * scale
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(out / "adapter_model.safetensors"))
    (out / "adapter_config.json").write_text(json.dumps({
        "peft_type": "LORA", "task_type": "CAUSAL_LM", "r": r, "lora_alpha": 2 * r, "lora_dropout": 0.0,
        "target_modules": list(TARGETS), "bias": "none", "base_model_name_or_path": str(model_dir),
        "fan_in_fan_out": False, "inference_mode": True,
    }), encoding="utf-8")
    return out
