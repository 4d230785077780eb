"""Prefect tasks of the LoRA SFT stage: launch the trainer process, log what it wrote.

The training runs in its own process (ARCHITECTURE.md, habit 9):
``accelerate launch -m components.training.sft --settings settings.json --out DIR``;
the task waits for it and reads ``DIR/result.json``. ``DIR`` is content-addressed
(SFT settings + base-model identity + training-table hash), so a run killed
mid-way leaves its checkpoints where the re-run looks, and the trainer resumes
from the last complete one. MLflow logging is a separate uncached task, so a
cached SFT still reports its loss curve and adapter to the new run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from components.config import SFTSettings, fingerprint
from tasks.caching import ArtifactRef, artifact_dir, component_cache_policy, file_fingerprint
from tasks.process import run_stage_process
from tasks.tracking import RunRef

CACHED = {"persist_result": True, "cache_expiration": None}


def sft_out_dir(project_dir: str, sft: SFTSettings, base_fingerprint: str, train: ArtifactRef) -> Path:
    """Where one SFT run writes (shared by a killed run and its re-run)."""
    return artifact_dir(project_dir, "sft", fingerprint([sft, base_fingerprint, train.fingerprint]))


@task(name="sft-train", cache_policy=component_cache_policy("components.training.sft"), **CACHED)
def sft_task(sft: SFTSettings, base: dict, train: ArtifactRef, project_dir: str) -> ArtifactRef:
    """Launch the trainer process (resuming if checkpoints exist); return the run directory."""
    from components.training.sft import accelerate_config_path, launch_command

    out = sft_out_dir(project_dir, sft, base["fingerprint"], train)
    settings_path = out / "settings.json"
    settings_path.write_text(json.dumps({"sft": sft.model_dump(mode="json"), "model_path": base["path"],
                                         "train_path": train.path}, indent=2), encoding="utf-8")
    command = launch_command(sys.executable, accelerate_config_path(sft.accelerate_config), settings_path, out)
    run_stage_process(command, out / "train.log", sft.timeout_s, "SFT")
    result = json.loads((out / "result.json").read_text(encoding="utf-8"))
    return ArtifactRef(str(out), file_fingerprint(out / "adapter" / "adapter_model.safetensors"), result)


@task(name="sft-log", cache_policy=NO_CACHE)
def log_sft_task(run: RunRef, trained: ArtifactRef) -> dict:
    """Loss/learning rate per step, the result numbers and the adapter, to the flow's run."""
    from components.training.sft import read_metrics
    from tasks import tracking

    out = Path(trained.path)
    rows = read_metrics(out / "metrics.jsonl")
    series = [{"step": r["step"], **{f"sft/train/{k}": v for k, v in r.items() if k != "step"}} for r in rows]
    tracking.log_metric_series(run, series)
    result = {f"sft/result/{k}": v for k, v in trained.summary.items() if isinstance(v, (int, float))}
    tracking.log_metrics(run, result)
    tracking.log_artifact(run, out / "adapter", "sft/adapter")
    tracking.log_artifact(run, out / "metrics.jsonl", "sft")
    return {"steps_logged": len(rows), "adapter": str(out / "adapter")}
