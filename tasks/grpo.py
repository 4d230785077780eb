"""Prefect tasks of the curriculum GRPO stage: audit the reward, train in the trainer process, log to MLflow.

Before training, ``reward_audit_task`` checks each audited reward verifier
(``GRPOStageSettings.audited_verifiers``) against the reference verifier on a
sample of rollouts (``components.audit.guard.check_reward_verifier``): a VLB
above ``fail_vlb`` stops the flow, after the figures are logged. When every
reward already judges with the reference, there is nothing to audit and the
run's tag says so instead of reporting a pass.
"""

from __future__ import annotations

from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from components.settings import GRPOStageSettings, RewardAuditSettings
from components.training.runner import TrainingJob
from components.config import fingerprint
from tasks.caching import CACHED, ArtifactRef, artifact_dir, component_cache_policy, file_fingerprint
from tasks.outputs import ModelRef
from tasks.tracking import RunRef
from tasks.artifacts import writing
from tasks.training import log_training_output, run_trainer, train_once, training_dir

TRAIN_MODULES = ("components.training", "components.rewards", "components.verification", "components.language",
                 "components.metrics", "components.settings", "components.retrieval")


@task(name="grpo-inputs", cache_policy=NO_CACHE)
def grpo_inputs_task(section: GRPOStageSettings, model: ModelRef, dataset: str) -> dict:
    """The job the trainer reads, the audit settings, and the fingerprints of the inputs.

    The job carries default audit settings: the audit decides whether training
    starts, not what is trained, so editing it never re-trains.
    """
    trained = section.model_copy(update={"audit": RewardAuditSettings()})
    validation = validation_dataset(section, dataset)
    job = TrainingJob(stage="grpo", grpo=trained, model=model.model.model, adapter=model.model.adapter, dataset=dataset,
                      validation_dataset=validation)
    fingerprints = [model.fingerprint, file_fingerprint(dataset)]
    if validation is not None:
        fingerprints.append(file_fingerprint(validation))
    return {"job": job, "audit": section.audit, "fingerprints": fingerprints}


def validation_dataset(section: GRPOStageSettings, dataset: str) -> str | None:
    """The held-out set of the validation curves: the configured file, else ``rl_validation.parquet`` beside
    the training set (the data stage writes both); ``None`` when validation is off."""
    if not section.validation.enabled:
        return None
    found = section.validation.dataset or str(Path(dataset).with_name("rl_validation.parquet"))
    if not Path(found).is_file():
        raise FileNotFoundError(f"grpo.validation: no validation set at {found}; set grpo.validation.dataset")
    return found


def _with_audit(inputs: dict) -> TrainingJob:
    job = inputs["job"]
    return job.model_copy(update={"grpo": job.grpo.model_copy(update={"audit": inputs["audit"]})})


@task(name="grpo-audit-rollouts", cache_policy=component_cache_policy("components.training"), **CACHED)
def audit_rollouts_task(inputs: dict, project_dir: str) -> ArtifactRef | None:
    """Rollouts for the audit: the given file (``audit.rollouts``), else sampled from the policy; ``None``
    when there is no verifier to audit."""
    job = _with_audit(inputs)
    if not job.grpo.audited_verifiers():
        return None
    if job.grpo.audit.rollouts:
        path = Path(job.grpo.audit.rollouts)
        return ArtifactRef(str(path), file_fingerprint(path), {"source": "file"})
    out = training_dir(project_dir, job, *inputs["fingerprints"])
    with writing(out) as slot:
        if (done := slot.reuse(out / "rollouts.jsonl")) is not None:
            return done
        run_trainer(job, out, phase="rollouts")
        return slot.publish(out / "rollouts.jsonl", {"source": "policy"})


@task(name="grpo-reward-audit", cache_policy=NO_CACHE)
def reward_audit_task(run: RunRef, inputs: dict, rollouts: ArtifactRef | None) -> dict:
    """VLB of each audited verifier on a rollout sample; logs ``grpo/audit/*``; raises above ``fail_vlb``."""
    from components.audit.guard import RewardBiasError, check_reward_verifier
    from components.training.grpo_data import dataset_rows, load_rows
    from components.training.rollouts import audit_rows
    from tasks import tracking

    section = _with_audit(inputs).grpo
    audit, verifiers = section.audit, section.audited_verifiers()
    if not verifiers:
        tracking.set_tags(run, {"polyreason.grpo.audit": "nothing-to-audit",
                                "polyreason.grpo.audit.reason": f"every reward judges with the reference verifier "
                                                                f"{audit.reference!r}"})
        return {"status": "nothing-to-audit", "verifiers": [], "reference": audit.reference}
    dataset = dataset_rows(load_rows(inputs["job"].dataset), section)
    rows = audit_rows(load_rows(rollouts.path), dataset, audit.sample_size, section.sampling.seed)
    results = {verifier: check_reward_verifier(rows, verifier, warn_vlb=audit.warn_vlb, fail_vlb=audit.fail_vlb,
                                               metric=audit.metric, reference=audit.reference, raise_on_fail=False)
               for verifier in verifiers}
    metrics = {"grpo/audit/rows": float(len(rows))}
    for verifier, result in results.items():
        metrics[f"grpo/audit/{verifier}/vlb_{audit.metric}"] = result.vlb
        metrics.update({f"grpo/audit/{verifier}/{audit.metric}/{lang}": getattr(rates, audit.metric)
                        for lang, rates in result.per_lang.items()})
    tracking.log_metrics(run, metrics)
    worst = max(results.values(), key=lambda r: ("ok", "warn", "fail").index(r.status))
    tracking.set_tags(run, {"polyreason.grpo.audit": worst.status, "polyreason.grpo.audit.verifiers": ",".join(verifiers),
                            "polyreason.grpo.audit.reference": audit.reference})
    if worst.status == "fail":  # raised after logging, so the run shows why it stopped
        raise RewardBiasError(f"reward verifier {worst.verifier!r}: VLB({audit.metric}) = {worst.vlb:.3f} against "
                              f"{audit.reference!r} exceeds fail_vlb = {audit.fail_vlb} (per language: grpo/audit/*)")
    return {"status": worst.status, "verifiers": verifiers, "reference": audit.reference, "rows": len(rows),
            "vlb": {verifier: result.vlb for verifier, result in results.items()}}


@task(name="grpo-train", cache_policy=component_cache_policy(*TRAIN_MODULES), **CACHED)
def grpo_train_task(inputs: dict, project_dir: str) -> ArtifactRef:
    """Launch the trainer process (resuming if checkpoints exist); return the run directory."""
    return train_once(inputs["job"], training_dir(project_dir, inputs["job"], *inputs["fingerprints"]))


@task(name="grpo-log", cache_policy=NO_CACHE)
def log_grpo_task(run: RunRef, trained: ArtifactRef) -> dict:
    """Per-step curves (``grpo/...``), result numbers, checkpoints, the adapter and the curriculum plot."""
    from components.training.report import final_values, plot_curriculum
    from tasks import tracking

    logged = log_training_output(run, trained, "grpo")
    records = logged.pop("records")
    plot = plot_curriculum(records, Path(trained.path) / "curriculum.png")
    if plot is not None:
        tracking.log_artifact(run, plot, "grpo")
    return {**logged, "plot": str(plot) if plot else None, "final": final_values(records)}


@task(name="grpo-final-weights", cache_policy=component_cache_policy("components.training.adapters"), **CACHED)
def final_weights_task(trained: ArtifactRef, base_path: str, sft_adapter: str | None, project_dir: str) -> dict:
    """The GRPO model relative to the original base: the SFT and GRPO adapters as one, or the merged model.

    After a KL-triggered reference reset the trainer wrote a full merged model:
    that is the final model. Otherwise the GRPO adapter (trained on the base with
    the SFT adapter merged in) is concatenated with the SFT adapter into one adapter.
    """
    from components.training.adapters import combine_adapters

    summary = trained.summary
    if summary.get("merged_dir"):
        return {"weights": summary["merged_dir"], "kind": "merged"}
    if sft_adapter is None:
        return {"weights": summary["adapter_dir"], "kind": "adapter"}
    out = artifact_dir(project_dir, "grpo-final", fingerprint([trained.fingerprint, base_path, sft_adapter]))
    with writing(out) as slot:
        if slot.reuse(out / "adapter") is None:
            combine_adapters(base_path, [sft_adapter, summary["adapter_dir"]], out / "adapter")
            files = [path for path in sorted((out / "adapter").rglob("*")) if path.is_file()]
            slot.publish(out / "adapter", {}, files=files, fingerprint=fingerprint([trained.fingerprint, sft_adapter]))
    return {"weights": str(out / "adapter"), "kind": "adapter"}
