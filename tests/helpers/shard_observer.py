"""What each process of a (sharded) launch really holds, written by the process itself (``shard_probe/``).

``ShardObserver`` is a trainer callback added by ``tests/helpers/shard_probe/sitecustomize.py``. It gathers
whole weights with the sharding libraries' own primitives (DeepSpeed's ``GatheredParameters`` for ZeRO-3
partitions, ``DTensor.full_tensor`` for FSDP2 shards), never through the project's code:

* when training begins (after accelerate has wrapped and sharded the policy, and after a resumed run has loaded
  its checkpoint), every rank writes ``begin-<rank>.json``: the largest |difference| between trl's reference
  model and the original weights (``POLYREASON_SHARD_PROBE_ORIGINAL``: a safetensors file, cast to the
  reference's dtype), between the policy and them, and between reference and policy; whether each model's
  parameters were sharded on that rank (its local parameters hold fewer numbers than the whole ones);
* when training ends, rank 0 writes the gathered trained policy to ``trained.safetensors``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def install(trainer_class: type) -> None:
    """Wrap ``trainer_class.train`` so that every trainer gets an observer before it trains."""
    train = trainer_class.train

    def observed_train(self, *args, **kwargs):
        self.add_callback(ShardObserver(self))
        return train(self, *args, **kwargs)

    trainer_class.train = observed_train


def whole_weights(model: Any) -> tuple[dict[str, Any], bool]:
    """Every parameter's whole tensor (a copy), and whether any of them was sharded on this rank."""
    from torch.distributed.tensor import DTensor

    module = getattr(model, "module", model)  # a DeepSpeed engine holds the model as .module
    named = dict(module.named_parameters())
    if any(hasattr(p, "ds_id") for p in named.values()):
        import deepspeed

        sharded = any(p.numel() < p.ds_numel for p in named.values())
        with deepspeed.zero.GatheredParameters(list(named.values())):
            return {name: p.detach().clone() for name, p in named.items()}, sharded
    sharded = any(isinstance(p, DTensor) and p.to_local().numel() < p.numel() for p in named.values())
    return {name: (p.full_tensor() if isinstance(p, DTensor) else p).detach().clone()
            for name, p in named.items()}, sharded


def largest_difference(left: dict[str, Any], right: dict[str, Any]) -> float:
    """max |left - right| over the names both hold (right cast to left's dtype first), as a float."""
    names = sorted(set(left) & set(right))
    if not names:
        raise AssertionError(f"no weight names in common: {sorted(left)[:3]} vs {sorted(right)[:3]}")
    return max(float((left[n].float() - right[n].to(left[n].dtype).float()).abs().max()) for n in names)


class ShardObserver:
    """The trainer callback (duck-typed, as transformers only calls its ``on_*`` methods)."""

    def __init__(self, trainer: Any) -> None:
        self.trainer = trainer
        self.directory = Path(os.environ["POLYREASON_SHARD_PROBE"])
        self.directory.mkdir(parents=True, exist_ok=True)

    def __getattr__(self, name: str):
        if name.startswith("on_"):
            return lambda *args, **kwargs: None
        raise AttributeError(name)

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        from safetensors.torch import load_file

        rank = self.trainer.accelerator.process_index
        original = load_file(os.environ["POLYREASON_SHARD_PROBE_ORIGINAL"])
        policy, policy_sharded = whole_weights(self.trainer.model)
        record = {"rank": rank, "step": state.global_step, "policy_sharded": policy_sharded,
                  "distributed_type": str(self.trainer.accelerator.distributed_type.value),
                  "policy_vs_original": largest_difference(policy, original)}
        reference = getattr(self.trainer, "ref_model", None)
        if reference is not None:
            weights, sharded = whole_weights(reference)
            record.update(reference_sharded=sharded, reference_vs_original=largest_difference(weights, original),
                          reference_vs_policy=largest_difference(weights, policy),
                          reference_dtype=str(next(iter(weights.values())).dtype))
        (self.directory / f"begin-{rank}.json").write_text(json.dumps(record), encoding="utf-8")

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        from safetensors.torch import save_file

        weights, _ = whole_weights(self.trainer.model)
        if self.trainer.accelerator.is_main_process:
            save_file({n: t.contiguous() for n, t in weights.items()}, str(self.directory / "trained.safetensors"))
