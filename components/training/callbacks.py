"""Trainer callbacks of the GRPO stage: curriculum checkpointing, KL-triggered reference reset, metrics sink.

transformers' ``CallbackHandler`` calls ``callback.on_<event>(args, state,
control, model=..., optimizer=..., ..., **kwargs)`` for every event and keeps
``control`` unless a callback returns a new one. The callbacks here implement
the events they need and answer every other ``on_*`` with a no-op
(``_Callback.__getattr__``), so this module imports neither transformers nor
torch at import time.

* ``CurriculumCallback`` — PCS τ schedule: closes the Pass@SLC window every
  ``interval`` optimizer steps (``on_step_end``, which runs before logging and
  saving, so checkpoint N holds the τ decided at step N); the window's counts
  are summed over processes by ``reduce`` (an all-reduce through the trainer's
  accelerator) so every rank takes the same decision; writes
  ``curriculum_state.json`` into each ``checkpoint-N`` (``on_save``, main
  process) and reads it back from the checkpoint training resumes from
  (``on_train_begin``, every rank; a shared filesystem is assumed).
* ``ReferenceResetCallback`` — PCS: "reset the reference model to the current
  policy when the KL loss exceeds 0.2, with a KL coefficient of 0.001". trl's
  ``sync_ref_model`` refuses PEFT models and syncs on a fixed period, so this
  reads the ``kl`` trl logs (already averaged over processes) in ``on_log`` and,
  when it is strictly above ``threshold``, merges the LoRA adapter into the base
  weights and re-initialises the adapter (A: Kaiming-uniform from a seeded
  generator, identical on every rank; B: zeros) and clears its optimizer state.
  Under PEFT, trl's reference is the model with adapters disabled (a fresh
  ``peft_config`` adapter), so after the reset policy and reference are the
  same function. The merged factors of every reset are stored in each
  checkpoint (``reference_resets.safetensors``) and replayed on resume, because
  a LoRA checkpoint does not contain the base weights. Not supported: DoRA,
  a pretrained adapter trained in place (trl's ``"ref"`` adapter; merge it
  first), ZeRO-3/FSDP sharded LoRA weights. Reference log-probs already computed for
  the current generation batch (``steps_per_generation > 1``) are not recomputed.
  With all weights trained (no adapter) trl holds a separate reference model
  (``trainer.ref_model``), and the reset copies the policy's weights into it
  with trl's own ``SyncRefModelCallback.sync_target_model`` at mixing weight 1
  (which gathers ZeRO-3 partitions first); the reference's weights of the last
  reset are stored in each checkpoint (``reference_model.safetensors``) and
  loaded back on resume. A sharded reference (ZeRO-3, FSDP) is reset in place,
  but its weights are not stored: resuming such a run after a reset is refused
  with a message (set ``resume: false``) rather than continued against the wrong
  reference.
* ``MetricsJsonlCallback`` — the MLflow-free sink: one JSON line per ``on_log``
  with trl's metrics, our reward components (``log_metric``), the values of
  the ``providers`` (τ, resets) and the seconds since training began, and the lines other callbacks ``write`` (the
  validation curves); on resume it drops lines past the checkpoint.

>>> cb = MetricsJsonlCallback("unused.jsonl")
>>> cb.on_prediction_step(None, None, None) is None   # every unknown event is a no-op
True
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from components.rewards.curriculum import Reduce, TauCurriculum

CURRICULUM_FILE = "curriculum_state.json"
RESETS_FILE = "reference_resets.json"
RESETS_TENSORS = "reference_resets.safetensors"
REFERENCE_WEIGHTS = "reference_model.safetensors"


class _Callback:
    """Duck-typed ``TrainerCallback``: every ``on_*`` event not defined by a subclass does nothing."""

    def __getattr__(self, name: str) -> Callable[..., None]:
        if name.startswith("on_"):
            return lambda *args, **kwargs: None
        raise AttributeError(name)


def checkpoint_dir(args: Any, state: Any) -> Path:
    """``<output_dir>/checkpoint-<global_step>``, where ``Trainer._save_checkpoint`` just wrote."""
    return Path(args.output_dir) / f"checkpoint-{state.global_step}"


# ---------------------------------------------------------------- τ curriculum


class CurriculumCallback(_Callback):
    """Steps, checkpoints and restores the reward curricula (``name -> TauCurriculum``)."""

    def __init__(self, curricula: Mapping[str, TauCurriculum], *, reduce: Reduce | None = None,
                 resume_from: str | Path | None = None) -> None:
        self.curricula = dict(curricula)
        self.reduce = reduce
        self.resume_from = Path(resume_from) if resume_from else None

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.resume_from is not None:
            self.load(self.resume_from)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        for curriculum in self.curricula.values():
            curriculum.maybe_update(state.global_step, self.reduce)

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.is_world_process_zero:
            self.save(checkpoint_dir(args, state))

    def save(self, directory: str | Path) -> None:
        """Write every curriculum's state to ``directory/curriculum_state.json``."""
        payload = {"curricula": {name: c.state_dict() for name, c in self.curricula.items()}}
        Path(directory).mkdir(parents=True, exist_ok=True)
        (Path(directory) / CURRICULUM_FILE).write_text(json.dumps(payload, indent=1), encoding="utf-8")

    def load(self, directory: str | Path) -> None:
        """Restore the curricula from ``directory/curriculum_state.json`` (an error when it is missing)."""
        path = Path(directory) / CURRICULUM_FILE
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no curriculum state in the checkpoint to resume from")
        saved = json.loads(path.read_text(encoding="utf-8"))["curricula"]
        missing = sorted(set(self.curricula) - set(saved))
        if missing:
            raise ValueError(f"{path}: no state for curricula {missing}")
        for name, curriculum in self.curricula.items():
            curriculum.load_state_dict(saved[name])

    def metrics(self) -> dict[str, float]:
        """τ and the last window's Pass@SLC (names prefixed by the reward when there are several)."""
        out: dict[str, float] = {}
        for name, c in self.curricula.items():
            prefix = "curriculum/" if len(self.curricula) == 1 else f"curriculum/{name}/"
            out[f"{prefix}tau"] = c.tau
            if c.last_pass_at_slc is not None:
                out[f"{prefix}pass_at_slc"] = c.last_pass_at_slc
        return out


# ---------------------------------------------------------------- reference reset


def _lora_layers(model: Any, adapter: str) -> Iterable[tuple[str, Any]]:
    from peft.tuners.lora import LoraLayer

    for name, module in model.named_modules():
        if isinstance(module, LoraLayer) and adapter in module.lora_A:
            if module.use_dora.get(adapter, False):
                raise NotImplementedError(f"{name}: reference reset does not support DoRA adapters")
            yield name, module


def _peft_adapter(model: Any) -> str:
    peft_config = getattr(model, "peft_config", None)
    if not peft_config:
        raise NotImplementedError("reset_reference_to_policy merges a PEFT (LoRA) adapter; a full model's reference "
                                  "is reset by copy_policy_into_reference")
    if "ref" in peft_config:
        raise NotImplementedError("reference reset does not support trl's 'ref' adapter: merge the "
                                  "pretrained adapter into the base model and train a fresh one")
    adapter = model.active_adapter
    return adapter if isinstance(adapter, str) else adapter[0]


def _merge_into_base(module: Any, adapter: str) -> None:
    base = module.get_base_layer()
    base.weight.data += module.get_delta_weight(adapter).to(base.weight.dtype)


def reset_reference_to_policy(model: Any, optimizer: Any = None, *, seed: int = 0) -> dict[str, Any]:
    """Merge the active LoRA adapter into the base weights and start it afresh; returns the merged factors.

    Afterwards the policy (base + fresh adapter, B = 0) and trl's PEFT reference
    (adapters disabled) compute the same function. ``seed`` fixes the new A so
    every process draws the same one.
    """
    import torch

    adapter = _peft_adapter(model)
    generator = torch.Generator().manual_seed(seed)
    factors: dict[str, Any] = {}
    stale = []
    with torch.no_grad():
        for name, module in _lora_layers(model, adapter):
            lora_a, lora_b = module.lora_A[adapter].weight, module.lora_B[adapter].weight
            factors[f"{name}.lora_A"] = lora_a.detach().to("cpu", copy=True).contiguous()
            factors[f"{name}.lora_B"] = lora_b.detach().to("cpu", copy=True).contiguous()
            _merge_into_base(module, adapter)
            fresh = torch.empty(lora_a.shape, dtype=torch.float32)
            torch.nn.init.kaiming_uniform_(fresh, a=math.sqrt(5), generator=generator)
            lora_a.copy_(fresh)
            lora_b.zero_()
            stale += [lora_a, lora_b]
    inner = getattr(optimizer, "optimizer", optimizer)
    for param in stale if inner is not None else ():
        inner.state.pop(param, None)
    return factors


def is_peft_model(model: Any) -> bool:
    """Whether ``model`` carries peft adapters (a LoRA policy) rather than being trained in full."""
    return bool(getattr(model, "peft_config", None))


def copy_policy_into_reference(model: Any, reference: Any) -> None:
    """Full fine-tuning: the reference model's weights become the policy's (trl's sync at mixing weight 1).

    Either both models are laid out alike (unsharded, or both sharded: a reset during training), or the policy is
    still whole while trl has already sharded its reference (before training: ``components.training.grpo``). trl's sync
    handles ZeRO-3 in both cases (it gathers the partitioned parameters and rank 0 writes). Under FSDP2 a whole
    tensor cannot be added into a sharded one (``DTensor``), so each whole weight is first laid out as the
    reference's (torch's ``distribute_tensor``, rank 0's values scattered over its mesh and placements).
    """
    from trl.trainer.callbacks import SyncRefModelCallback

    if reference is None:
        raise NotImplementedError("reference reset of a full model needs trl's reference model (beta > 0)")
    if _fsdp2_sharded(reference) and not _fsdp2_sharded(model):
        _copy_whole_into_fsdp2(model, reference)
    else:
        SyncRefModelCallback.sync_target_model(model, reference, 1.0)


def _fsdp2_sharded(model: Any) -> bool:
    from torch.distributed.tensor import DTensor

    return any(isinstance(parameter, DTensor) for parameter in model.parameters())


def _copy_whole_into_fsdp2(model: Any, reference: Any) -> None:
    import torch
    from torch.distributed.tensor import DTensor, distribute_tensor

    with torch.no_grad():
        for target, source in zip(reference.parameters(), model.parameters(), strict=True):
            if isinstance(target, DTensor):
                source = distribute_tensor(source.detach().to(target.device, target.dtype), target.device_mesh,
                                           target.placements, src_data_rank=0)
            target.copy_(source)


def replay_resets(model: Any, merged: list[dict[str, Any]]) -> None:
    """Re-apply saved resets to freshly loaded base weights (the adapter's current values are kept)."""
    import torch

    adapter = _peft_adapter(model)
    layers = dict(_lora_layers(model, adapter))
    with torch.no_grad():
        stash = {n: (m.lora_A[adapter].weight.clone(), m.lora_B[adapter].weight.clone()) for n, m in layers.items()}
        for factors in merged:
            for name, module in layers.items():
                module.lora_A[adapter].weight.copy_(factors[f"{name}.lora_A"])
                module.lora_B[adapter].weight.copy_(factors[f"{name}.lora_B"])
                _merge_into_base(module, adapter)
        for name, module in layers.items():
            module.lora_A[adapter].weight.copy_(stash[name][0])
            module.lora_B[adapter].weight.copy_(stash[name][1])


class ReferenceResetCallback(_Callback):
    """Resets the reference to the policy whenever the logged KL is strictly above ``threshold``."""

    def __init__(self, threshold: float = 0.2, *, seed: int = 0, resume_from: str | Path | None = None,
                 reference: Callable[[], Any] | None = None, sharded: bool = False) -> None:
        self.threshold = threshold
        self.seed = seed
        self.resume_from = Path(resume_from) if resume_from else None
        self.reference = reference  # full fine-tuning: returns trl's reference model (trainer.ref_model)
        self.sharded = sharded  # the reference is partitioned over the processes (ZeRO-3, FSDP)
        self.history: list[dict[str, float]] = []
        self.merged: list[dict[str, Any]] = []

    @property
    def resets(self) -> int:
        return len(self.history)

    def should_reset(self, kl: float | None) -> bool:
        """PCS's trigger: the KL exceeds the threshold (``kl > threshold``; equal does not fire)."""
        return kl is not None and not math.isnan(kl) and kl > self.threshold

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        if self.resume_from is not None and (self.resume_from / RESETS_FILE).is_file():
            self.load(self.resume_from)
            if is_peft_model(model):
                replay_resets(model, self.merged)
            elif self.history:
                self._load_reference(self.resume_from)

    def on_log(self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None,
               model: Any = None, optimizer: Any = None, **kwargs: Any) -> None:
        kl = (logs or {}).get("kl")
        if not self.should_reset(kl):
            return
        if is_peft_model(model):
            self.merged.append(reset_reference_to_policy(model, optimizer, seed=self.seed + self.resets))
        else:
            copy_policy_into_reference(model, self.reference() if self.reference else None)
            self.merged.append({})
        self.history.append({"step": state.global_step, "kl": float(kl)})

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.is_world_process_zero:
            self.save(checkpoint_dir(args, state), with_reference=True)

    def save(self, directory: str | Path, *, with_reference: bool = False) -> None:
        """Write the reset history (JSON) and the merged factors (safetensors) to ``directory``; with
        ``with_reference`` (a checkpoint) also a full model's reference weights after a reset."""
        from safetensors.torch import save_file

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / RESETS_FILE).write_text(json.dumps({"history": self.history}, indent=1), encoding="utf-8")
        tensors = {f"{i}/{key}": t for i, factors in enumerate(self.merged) for key, t in factors.items()}
        if tensors:
            save_file(tensors, str(directory / RESETS_TENSORS))
        reference = self.reference() if with_reference and self.history and self.reference is not None else None
        if reference is not None and not self.sharded:  # a LoRA policy has no separate reference (trl: None)
            from safetensors.torch import save_model

            save_model(reference, str(directory / REFERENCE_WEIGHTS))

    def _load_reference(self, directory: Path) -> None:
        from safetensors.torch import load_model

        path = directory / REFERENCE_WEIGHTS
        if self.sharded:
            raise NotImplementedError(f"{directory}: this full-parameter run reset its reference {self.resets} time(s) "
                                      "and its reference is sharded (ZeRO-3/FSDP), whose weights a checkpoint does "
                                      "not hold; resuming would train against the wrong reference: set "
                                      "grpo.resume=false to start again")
        if self.reference is None or not path.is_file():
            raise FileNotFoundError(f"{path}: the checkpoint records reference resets of a full model but not the "
                                    "reference's weights")
        load_model(self.reference(), str(path))

    def load(self, directory: str | Path) -> None:
        """Read what ``save`` wrote."""
        from safetensors.torch import load_file

        directory = Path(directory)
        self.history = json.loads((directory / RESETS_FILE).read_text(encoding="utf-8"))["history"]
        self.merged = [{} for _ in self.history]
        if self.history and (directory / RESETS_TENSORS).is_file():
            for key, tensor in load_file(str(directory / RESETS_TENSORS)).items():
                index, name = key.split("/", 1)
                self.merged[int(index)][name] = tensor

    def metrics(self) -> dict[str, float]:
        return {"curriculum/reference_resets": float(self.resets)}


# ---------------------------------------------------------------- metrics sink


class MetricsJsonlCallback(_Callback):
    """Appends ``{"step": N, **logs, **providers()}`` to a JSONL file on the main process.

    Each step's line also gets ``time/elapsed_s``: the seconds since this process began training (trl's logs
    carry no clock), so the time a step takes once training runs can be told from the first steps' start-up
    (a resumed run starts its clock again).
    """

    ELAPSED = "time/elapsed_s"

    def __init__(self, path: str | Path, *, providers: Iterable[Callable[[], Mapping[str, float]]] = (),
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.path = Path(path)
        self.providers = list(providers)
        self.clock = clock
        self.started: float | None = None

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.started = self.clock()
        if not state.is_world_process_zero or not self.path.is_file():
            return
        kept = [line for line in self.path.read_text(encoding="utf-8").splitlines()
                if line.strip() and json.loads(line).get("step", 0) <= state.global_step]
        self.path.write_text("".join(f"{line}\n" for line in kept), encoding="utf-8")

    def on_log(self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None,
               **kwargs: Any) -> None:
        if not state.is_world_process_zero:
            return
        record = {k: v for k, v in (logs or {}).items() if isinstance(v, (int, float)) and v == v}
        if "train_runtime" not in record:  # the end-of-training summary repeats the last step
            for provider in self.providers:
                record.update(provider())
            if self.started is not None:
                record[self.ELAPSED] = round(self.clock() - self.started, 3)
        self.write(state.global_step, record)

    def write(self, step: int, values: Mapping[str, Any]) -> None:
        """Append one line ``{"step": step, **values}`` (callers write on the main process only)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({"step": step, **values}) + "\n")
