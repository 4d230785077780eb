"""Prefect tasks of the curriculum GRPO stage (issue 6): audit the reward, train in a process, log to MLflow.

The trainer runs in its own process (ARCHITECTURE.md, habit 9):
``accelerate launch -m components.training.grpo --settings job.json --out DIR``;
the task waits for it and reads ``DIR/result.json``. ``DIR`` is content-addressed
(stage settings without the audit part + the fingerprints of model, adapter and
dataset), so a killed run leaves its checkpoints where the re-run looks, and the
trainer resumes from the last one with the same τ and reference resets.
Before training, ``reward_audit_task`` runs the reward-audit guard
(``components.audit.guard.check_reward_verifier``) on a sample of rollouts:
VLB of the reward verifier against ``trusted`` above ``fail_vlb`` stops the
flow. MLflow logging is a separate uncached task, so a cached training still
reports its curves (``grpo/...``), adapters and plot to the new run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from components.config import GRPOStageSettings, fingerprint
from tasks.caching import ArtifactRef, artifact_dir, component_cache_policy, file_fingerprint
from tasks.process import run_stage_process
from tasks.tracking import RunRef

CACHED = {"persist_result": True, "cache_expiration": None}
TRAIN_MODULES = ("components.training.grpo", "components.training.callbacks", "components.rewards",
                 "components.verification", "components.language", "components.metrics.slc")


@task(name="grpo-inputs", cache_policy=NO_CACHE)
def grpo_inputs_task(model: dict, dataset: str, adapter: str | None = None) -> dict:
    """What the trainer reads, with fingerprints (``model`` as returned by ``tasks.models.resolve_model_task``)."""
    adapter_fp = file_fingerprint(Path(adapter) / "adapter_model.safetensors") if adapter else None
    return {"model": model["path"], "model_fingerprint": model["fingerprint"], "adapter": adapter,
            "adapter_fingerprint": adapter_fp, "dataset": dataset, "dataset_fingerprint": file_fingerprint(dataset)}


def grpo_out_dir(project_dir: str, section: GRPOStageSettings, inputs: dict) -> Path:
    """Where one GRPO run writes (shared by a killed run and its re-run)."""
    trained = section.model_dump(mode="json", exclude={"audit", "timeout_s"})
    keys = [inputs["model_fingerprint"], inputs["adapter_fingerprint"], inputs["dataset_fingerprint"]]
    return artifact_dir(project_dir, "grpo", fingerprint([trained, keys]))


def write_job(out: Path, section: GRPOStageSettings, inputs: dict) -> Path:
    """``job.json`` for the trainer process (a ``components.training.grpo.GRPOJob``)."""
    job = {"settings": section.model_dump(mode="json"), "model": inputs["model"], "dataset": inputs["dataset"],
           "adapter": inputs["adapter"]}
    path = out / "job.json"
    path.write_text(json.dumps(job, indent=1), encoding="utf-8")
    return path


def run_process(section: GRPOStageSettings, out: Path, phase: str) -> None:
    """Launch the trainer process for ``phase`` and wait; its output goes to ``out/<phase>.log``."""
    from components.training.grpo import launch_command
    from components.training.sft import accelerate_config_path

    config = accelerate_config_path(section.accelerate_config) if section.accelerate_config else None
    command = launch_command(sys.executable, config, out / "job.json", out, phase, section.cpu_threads)
    run_stage_process(command, out / f"{phase}.log", section.timeout_s, f"GRPO {phase}")


@task(name="grpo-audit-rollouts", cache_policy=component_cache_policy("components.training.grpo"), **CACHED)
def audit_rollouts_task(section: GRPOStageSettings, inputs: dict, project_dir: str) -> ArtifactRef:
    """Rollouts for the guard: the given file (``audit.rollouts``), else sampled from the policy."""
    out = grpo_out_dir(project_dir, section, inputs)
    if section.audit.rollouts:
        path = Path(section.audit.rollouts)
    else:
        write_job(out, section, inputs)
        run_process(section, out, "rollouts")
        path = out / "rollouts.jsonl"
    return ArtifactRef(str(path), file_fingerprint(path), {"source": "file" if section.audit.rollouts else "policy"})


@task(name="grpo-reward-audit", cache_policy=NO_CACHE)
def reward_audit_task(run: RunRef, section: GRPOStageSettings, inputs: dict, rollouts: ArtifactRef) -> dict:
    """VLB of the reward verifier on a rollout sample; logs ``grpo/audit/*``; raises above ``fail_vlb``."""
    from components.audit.guard import RewardBiasError, check_reward_verifier
    from components.training.grpo import dataset_rows, load_rows
    from components.training.grpo_rollouts import audit_rows
    from tasks import tracking

    audit = section.audit
    verifier = section.rewards[0].params.get("verifier", "trusted")
    dataset = dataset_rows(load_rows(inputs["dataset"]), section)
    rows = audit_rows(load_rows(rollouts.path), dataset, audit.sample_size, section.seed)
    result = check_reward_verifier(rows, verifier, warn_vlb=audit.warn_vlb, fail_vlb=audit.fail_vlb,
                                   metric=audit.metric, raise_on_fail=False)
    metrics = {f"grpo/audit/vlb_{audit.metric}": result.vlb, "grpo/audit/rows": float(len(rows))}
    metrics.update({f"grpo/audit/{audit.metric}/{lang}": getattr(rates, audit.metric)
                    for lang, rates in result.per_lang.items()})
    tracking.log_metrics(run, metrics)
    tracking.set_tags(run, {"polyreason.grpo.audit": result.status, "polyreason.grpo.reward_verifier": verifier})
    if result.status == "fail":  # raised after logging, so the run shows why it stopped
        raise RewardBiasError(f"reward verifier {verifier!r}: VLB({audit.metric}) = {result.vlb:.3f} against "
                              f"'trusted' exceeds fail_vlb = {audit.fail_vlb} (per language: grpo/audit/*)")
    return {"status": result.status, "vlb": result.vlb, "verifier": verifier, "rows": len(rows)}


@task(name="grpo-train", cache_policy=component_cache_policy(*TRAIN_MODULES), **CACHED)
def grpo_train_task(section: GRPOStageSettings, inputs: dict, project_dir: str) -> ArtifactRef:
    """Launch the trainer process (resuming if checkpoints exist); return the run directory."""
    out = grpo_out_dir(project_dir, section, inputs)
    write_job(out, section, inputs)
    run_process(section, out, "train")
    result = json.loads((out / "result.json").read_text(encoding="utf-8"))
    return ArtifactRef(str(out), file_fingerprint(out / "adapter" / "adapter_model.safetensors"), result)


@task(name="grpo-log", cache_policy=NO_CACHE)
def log_grpo_task(run: RunRef, trained: ArtifactRef) -> dict:
    """Per-step curves (``grpo/...``), result numbers, adapters per checkpoint and the curriculum plot."""
    from components.training.grpo_report import final_values, metric_series, plot_curriculum, read_metrics
    from tasks import tracking

    out = Path(trained.path)
    records = read_metrics(out / "metrics.jsonl")
    tracking.log_metric_series(run, metric_series(records))
    summary = trained.summary
    tracking.log_metrics(run, {"grpo/result/global_step": summary["global_step"],
                               "grpo/result/reference_resets": summary["reference_resets"],
                               "grpo/result/train_runtime": summary.get("train_runtime")})
    for checkpoint in sorted((out / "trainer").glob("checkpoint-*")):
        for name in ("adapter_model.safetensors", "adapter_config.json", "curriculum_state.json",
                     "reference_resets.json", "reference_resets.safetensors"):
            if (checkpoint / name).is_file():
                tracking.log_artifact(run, checkpoint / name, f"grpo/checkpoints/{checkpoint.name}")
    tracking.log_artifact(run, out / "adapter", "grpo/adapter")
    tracking.log_artifact(run, out / "metrics.jsonl", "grpo")
    plot = plot_curriculum(records, out / "curriculum.png")
    if plot is not None:
        tracking.log_artifact(run, plot, "grpo")
    return {"steps_logged": len(records), "adapter": str(out / "adapter"), "plot": str(plot) if plot else None,
            "final": final_values(records)}
