"""What SFT and GRPO share: the job a task hands to a trainer process, how that process is launched,
how a checkpoint is marked complete, where metrics go and how they are read back, how a model is loaded.

Each training stage runs in its own process: memory is freed when the stage
ends, and the same command scales to several GPUs through accelerate/DeepSpeed
configs. The task writes a ``TrainingJob`` to ``<out>/job.json`` and runs::

    accelerate launch --config_file components/training/accelerate/<name>.yaml -m components.training \
        --job <out>/job.json --out <out> [--phase train|rollouts]

(plain ``python -m components.training …`` without an accelerate config; on several
nodes, with each node's ``--num_machines``/``--machine_rank``: ``components.training.multinode``).

* A checkpoint counts as complete only once ``checkpoint_complete.json`` is in
  it: ``MarkCompleteCallback`` is added after every other callback, so it is
  written after the trainer state, the curriculum and the reference resets. A
  process killed during a save leaves a checkpoint without the marker, which a
  restart skips (``last_complete_checkpoint``).
* A run is identified by its key (``TrainingJob.run_key``, set by the task from
  everything its cache key holds: settings, inputs, code, library versions,
  world size). The marker records it, and a run resumes only a checkpoint
  marked with its own key: a checkpoint made under another key is never
  continued (``resume_checkpoint``). ``result.json`` says which happened
  (``start``: ``trained from step 0`` or ``resumed from step N of this key``).
* Metrics: ``MetricsJsonlCallback`` (``components.training.callbacks``) appends
  one JSON line per log event to ``<out>/metrics.jsonl`` on the main process;
  ``read_metrics`` reads them back for the task that logs them to MLflow,
  skipping a line torn by a killed process and merging lines of one step.
* Precision follows the model settings and the launch: ``auto`` is bfloat16 on
  CUDA and float32 on CPU; trl's ``bf16`` and the dtype the trained weights load
  in (fp32 master weights for a full-parameter bf16 run that no sharding keeps
  them for) are ``components.training.precision``'s.

>>> launch_command("py", None, Path("j.json"), Path("o"))
['py', '-m', 'components.training', '--job', 'j.json', '--out', 'o', '--phase', 'train']
>>> launch_command("py", Path("cpu.yaml"), Path("j.json"), Path("o"), cpu_threads=1)[1:7]
['-m', 'accelerate.commands.launch', '--config_file', 'cpu.yaml', '--num_cpu_threads_per_process', '1']
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

from components.settings import (
    CHECKED_UPSTREAM, REGISTRIES, GRPOStageSettings, LoraSettings, ModelSettings, SFTSettings,
)  # fmt: skip
from components.settings.base import REVEAL_CREDENTIALS, unknown_name_message
from components.training.accelerate import ACCELERATE_CONFIGS
from components.training.callbacks import _Callback, checkpoint_dir
from components.training.multinode import Rendezvous, accelerate_world
from components.training.precision import Precision, training_precision

COMPLETE_MARKER = "checkpoint_complete.json"
CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")


class TrainingJob(BaseModel):
    """What a task hands to a trainer process: the stage's settings and resolved input paths."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    stage: Literal["sft", "grpo"]
    sft: SFTSettings | None = None
    grpo: GRPOStageSettings | None = None
    model: str
    adapter: str | None = None
    dataset: str
    validation_dataset: str | None = None
    run_key: str | None = None  # the run's identity (``runtime.processes.trainer``); a checkpoint resumes only under it

    @model_validator(mode="after")
    def _one_section(self) -> "TrainingJob":
        if (self.sft is None) != (self.stage == "grpo") or (self.grpo is None) != (self.stage == "sft"):
            raise ValueError(f"a {self.stage} job carries exactly its own section")
        if self.grpo is not None and self.grpo.validation.enabled and self.validation_dataset is None:
            raise ValueError("grpo.validation is enabled but the job has no validation dataset")
        return self

    @property
    def settings(self) -> SFTSettings | GRPOStageSettings:
        return self.sft if self.stage == "sft" else self.grpo

    @property
    def model_settings(self) -> ModelSettings:
        """The trained model's settings (dtype, device, chat template) with the resolved path."""
        section = self.settings.model or ModelSettings()
        return section.model_copy(update={"model": self.model, "adapter": self.adapter, "gguf_file": None})


def write_job(job: TrainingJob, out_dir: Path) -> Path:
    """``<out_dir>/job.json``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "job.json"
    # the trainer process calls what the job names (a reward's judge): its URLs keep their credentials
    path.write_text(job.model_dump_json(indent=1, context={REVEAL_CREDENTIALS: True}), encoding="utf-8")
    return path


def read_job(path: str | Path) -> TrainingJob:
    """The job a task wrote (``write_job``) from a checked profile: its registry names are not checked again."""
    return TrainingJob.model_validate_json(Path(path).read_text(encoding="utf-8"),
                                           context={REGISTRIES: CHECKED_UPSTREAM})


def accelerate_config_path(name: str) -> Path:
    """A shipped config by name (``components.training.accelerate``) or the path of a YAML file.

    >>> accelerate_config_path("cpu").name
    'cpu.yaml'
    """
    candidate = Path(name).expanduser()
    if candidate.suffix in (".yaml", ".yml"):
        return candidate
    if name not in ACCELERATE_CONFIGS:
        raise ValueError(unknown_name_message("accelerate config", name, sorted(ACCELERATE_CONFIGS)))
    return ACCELERATE_CONFIGS[name]


def world_size(settings: SFTSettings | GRPOStageSettings, rendezvous: Rendezvous | None = None) -> int:
    """How many trainer processes the launch starts in all: nodes x processes per node on several nodes
    (``Rendezvous.launch_flags`` passes that as ``--num_processes``), else what the accelerate config launches
    (``nodes.accelerate_world``: its ``num_machines`` × ``num_processes // num_machines``; 1 when it names
    none), 1 without a config.

    >>> world_size(SFTSettings()), world_size(SFTSettings(accelerate_config="cpu-2"))
    (1, 2)
    >>> world_size(SFTSettings(accelerate_config="multi-gpu-fsdp"), Rendezvous(2, 0, 8, "n0", 29500))
    16
    """
    if rendezvous is not None:
        return rendezvous.nnodes * rendezvous.nproc_per_node
    if not settings.accelerate_config:
        return 1
    machines, per_machine = accelerate_world(launch_config(settings.accelerate_config))
    return machines * per_machine


def launch_config(accelerate_config: str | None) -> dict[str, Any]:
    """The accelerate config a stage launches with, as a mapping (``{}`` without one: plain ``python -m``).

    >>> launch_config("cpu")["distributed_type"], launch_config(None)
    ('NO', {})
    """
    if not accelerate_config:
        return {}
    import yaml

    path = accelerate_config_path(accelerate_config)
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except OSError as error:
        raise FileNotFoundError(f"accelerate_config: cannot read {path}: {error}") from error


def launch_command(python: str, accelerate_config: Path | None, job_path: Path, out_dir: Path,
                   phase: str = "train", cpu_threads: int | None = None,
                   rendezvous: Rendezvous | None = None) -> list[str]:
    """``accelerate launch`` of the training entry point (same interpreter, so the same environment); on several
    nodes, with this node's place in the job (``components.training.multinode``)."""
    tail = ["-m", "components.training", "--job", str(job_path), "--out", str(out_dir), "--phase", phase]
    if accelerate_config is None:
        if rendezvous is not None:
            raise ValueError("training on several nodes needs an accelerate config (accelerate_config)")
        return [python, *tail]
    threads = ["--num_cpu_threads_per_process", str(cpu_threads)] if cpu_threads else []
    nodes = rendezvous.launch_flags() if rendezvous is not None else []
    return [python, "-m", "accelerate.commands.launch", "--config_file", str(accelerate_config), *nodes, *threads,
            *tail]


def job_launch_command(python: str, job: TrainingJob, job_path: Path, out_dir: Path, phase: str = "train",
                       rendezvous: Rendezvous | None = None) -> list[str]:
    """``launch_command`` with the stage's accelerate config and thread count."""
    settings = job.settings
    config = accelerate_config_path(settings.accelerate_config) if settings.accelerate_config else None
    return launch_command(python, config, job_path, out_dir, phase, settings.cpu_threads, rendezvous)


# ---------------------------------------------------------------- checkpoints


class MarkCompleteCallback(_Callback):
    """Added last: marks a checkpoint whose every part is on disk.

    ``abort_after`` ends the process abruptly (``os._exit``) once checkpoint N is
    written: the crash a resume test needs.
    """

    def __init__(self, abort_after: int | None = None, run_key: str | None = None) -> None:
        self.abort_after = abort_after
        self.run_key = run_key

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if state.is_world_process_zero:
            marker = {"step": state.global_step, "run_key": self.run_key}
            (checkpoint_dir(args, state) / COMPLETE_MARKER).write_text(json.dumps(marker))
        if self.abort_after is not None and state.global_step >= self.abort_after:
            os._exit(75)


def resume_checkpoint(settings: SFTSettings | GRPOStageSettings, out_dir: Path,
                      run_key: str | None = None) -> Path | None:
    """The checkpoint a run continues from: the last complete one under ``<out>/trainer`` made under ``run_key``
    (any, when the job has no key) when ``resume`` is on."""
    return last_complete_checkpoint(out_dir / "trainer", run_key) if settings.resume else None


def last_complete_checkpoint(directory: Path, run_key: str | None = None) -> Path | None:
    """The highest ``checkpoint-N`` under ``directory`` that holds the completion marker (marked with ``run_key``,
    when one is given: a checkpoint of another run's key is not this run's to continue).

    >>> last_complete_checkpoint(Path("/nonexistent")) is None
    True
    """
    if not directory.is_dir():
        return None
    complete = [(int(m.group(1)), path) for path in directory.iterdir()
                if (m := CHECKPOINT.match(path.name)) and (path / COMPLETE_MARKER).is_file()
                and (run_key is None or marker_key(path) == run_key)]
    return max(complete)[1] if complete else None


def marker_key(checkpoint: Path) -> str | None:
    """The run key a checkpoint's completion marker records (``None`` for a marker without one)."""
    try:
        return json.loads((checkpoint / COMPLETE_MARKER).read_text(encoding="utf-8")).get("run_key")
    except (OSError, ValueError, AttributeError):
        return None


def start_of(resumed_from: Path | None) -> dict[str, Any]:
    """What ``result.json`` says about where the run started: step 0, or the step of its own key's checkpoint.

    >>> start_of(None)["start"], start_of(Path("t/checkpoint-3"))["start"]
    ('trained from step 0', 'resumed from step 3 of this key')
    """
    step = int(CHECKPOINT.match(resumed_from.name).group(1)) if resumed_from is not None else 0
    text = f"resumed from step {step} of this key" if resumed_from is not None else "trained from step 0"
    return {"start": text, "start_step": step}


# ---------------------------------------------------------------- metrics


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """Records of ``metrics.jsonl`` by step (lines of one step merged, later values win); a torn line is skipped.

    After a resume the callback drops lines past the checkpoint, and the steps are
    logged again; merging by step also folds trl's end-of-training summary into
    the last step.
    """
    path = Path(path)
    by_step: dict[int, dict[str, Any]] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:  # torn by a killed process: that step is logged again on resume
                continue
            by_step.setdefault(int(row.get("step", 0)), {}).update(row)
    return [by_step[step] for step in sorted(by_step)]


# ---------------------------------------------------------------- models


def resolve_device(model: ModelSettings) -> str:
    """``cuda`` when asked, or ``auto`` with a GPU visible; else ``cpu``."""
    import torch

    if model.device != "auto":
        return model.device
    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_dtype(model: ModelSettings, device: str) -> str:
    """The weights' dtype name: as configured, or ``auto`` = bfloat16 on CUDA, float32 on CPU.

    >>> resolve_dtype(ModelSettings(), "cpu"), resolve_dtype(ModelSettings(dtype="float16"), "cpu")
    ('float32', 'float16')
    """
    if model.dtype != "auto":
        return model.dtype
    return "bfloat16" if device == "cuda" else "float32"


def run_precision(settings: SFTSettings | GRPOStageSettings, model: ModelSettings, device: str) -> Precision:
    """The trainer's precision (``components.training.precision``) for the stage's weights, launch and LoRA.

    >>> run_precision(SFTSettings(lora=None), ModelSettings(), "cpu")
    Precision(weights='float32', bf16=False, fp16=False)
    """
    return training_precision(resolve_dtype(model, device), launch_config(settings.accelerate_config),
                              full=settings.lora is None)


def trainer_runtime(precision: Precision, device: str, output_dir: Path) -> dict[str, Any]:
    """The trl values decided by where and how the trainer runs (``components.settings.trainer.TRL_RUNTIME``).

    >>> trainer_runtime(Precision("float32", bf16=False), "cpu", Path("o"))
    {'output_dir': 'o', 'use_cpu': True, 'bf16': False, 'fp16': False, 'report_to': []}
    """
    return {"output_dir": str(output_dir), "use_cpu": device == "cpu", "bf16": precision.bf16,
            "fp16": precision.fp16, "report_to": []}


def load_model(model: ModelSettings, device: str, *, padding_side: str = "right",
               dtype: str | None = None) -> tuple[Any, Any]:
    """Weights (with ``model.adapter`` merged in when given) and a tokenizer that pads; ``dtype``: the weights' dtype
    when it is not the model settings' (a trainer's ``Precision.weights``)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    weights = AutoModelForCausalLM.from_pretrained(model.model,
                                                   dtype=getattr(torch, dtype or resolve_dtype(model, device)))
    if model.adapter:
        from peft import PeftModel

        weights = PeftModel.from_pretrained(weights, model.adapter).merge_and_unload()
    adapter_tokenizer = model.adapter and (Path(model.adapter) / "tokenizer_config.json").is_file()
    tokenizer = AutoTokenizer.from_pretrained(model.adapter if adapter_tokenizer else model.model,
                                              padding_side=padding_side)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return weights, tokenizer


def lora_config(lora: LoraSettings | None):
    """peft ``LoraConfig`` for a causal LM; ``None`` (full-parameter training: trl trains every weight) for none.

    >>> lora_config(None) is None
    True
    """
    if lora is None:
        return None
    from peft import LoraConfig

    return LoraConfig(r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout,
                      target_modules=lora.target_modules, task_type="CAUSAL_LM")
