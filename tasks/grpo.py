"""Prefect tasks of the curriculum GRPO stage: audit the reward, train in the trainer process, log to MLflow.

Before training, ``reward_audit_task`` checks each audited reward verifier
(``GRPOStageSettings.audited_verifiers``) against the reference verifier on a
sample of rollouts (``components.audit.guard.check_reward_verifier``): a VLB
above ``fail_vlb`` stops the flow, after the figures are logged. When every
reward already judges with the reference, there is nothing to audit and the
run's tag says so instead of reporting a pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from components.config import fingerprint
from components.settings import GRPOStageSettings, RewardAuditSettings
from components.training.runner import TrainingJob
from runtime import tracking
from runtime.artifacts import ArtifactRef, file_fingerprint
from runtime.cache.policy import CACHED, cache_policy
from runtime.outputs import FinalWeights, ModelRef, RewardAudit, TrainedRun
from runtime.project import Made, Project, produce_in
from runtime.tracking import RunRef
from runtime.processes.trainer import (
    log_checkpoints, log_rollout_tables, log_training_output, run_trainer, train_once, training_policy, training_run,
)  # fmt: skip


@dataclass(frozen=True)
class GRPOInputs:
    """What the GRPO tasks share: the job the trainer reads (with default audit settings), the audit settings,
    and the fingerprints of the model and datasets (the run directory's identity)."""

    job: TrainingJob
    audit: RewardAuditSettings
    fingerprints: list[str]

    def audited_job(self) -> TrainingJob:
        """The job with the audit settings put back (what the audit tasks read)."""
        return self.job.model_copy(update={"grpo": self.job.grpo.model_copy(update={"audit": self.audit})})


@task(name="grpo-inputs", cache_policy=NO_CACHE)
def grpo_inputs_task(section: GRPOStageSettings, model: ModelRef, dataset: str) -> GRPOInputs:
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
    return GRPOInputs(job=job, audit=section.audit, fingerprints=fingerprints)


def validation_dataset(section: GRPOStageSettings, dataset: str) -> str | None:
    """The held-out set of the validation curves: the configured file, else ``rl_validation.parquet`` beside
    the training set (the data stage writes both); ``None`` when validation is off."""
    if not section.validation.enabled:
        return None
    found = section.validation.dataset or str(Path(dataset).with_name("rl_validation.parquet"))
    if not Path(found).is_file():
        raise FileNotFoundError(f"grpo.validation: no validation set at {found}; set grpo.validation.dataset")
    return found


@task(name="grpo-audit-rollouts", cache_policy=training_policy("training"), **CACHED)
def audit_rollouts_task(inputs: GRPOInputs, project: Project) -> ArtifactRef | None:
    """Rollouts for the audit: the given file (``audit.rollouts``), else sampled from the policy; ``None``
    when there is no verifier to audit."""
    job = inputs.audited_job()
    if not job.grpo.audited_verifiers():
        return None
    if job.grpo.audit.rollouts:
        path = Path(job.grpo.audit.rollouts)
        return ArtifactRef(str(path), file_fingerprint(path), {"source": "file"})

    keyed, out = training_run(project, job, grpo_train_task, *inputs.fingerprints)  # the training run's directory

    def sample(directory: Path) -> dict:
        run_trainer(keyed, directory, phase="rollouts")
        return {"source": "policy"}

    return produce_in(out, "rollouts.jsonl", sample)


@task(name="grpo-reward-audit", cache_policy=NO_CACHE)
def reward_audit_task(run: RunRef, inputs: GRPOInputs, rollouts: ArtifactRef | None) -> RewardAudit:
    """VLB of each audited verifier on a rollout sample; logs ``grpo/audit/*``; raises above ``fail_vlb``."""
    from components.audit.guard import RewardBiasError, check_reward_verifier
    from components.training.grpo_data import dataset_rows, load_rows
    from components.training.rollouts import audit_rows

    section = inputs.audited_job().grpo
    audit, verifiers = section.audit, section.audited_verifiers()
    if not verifiers:
        tracking.set_tags(run, {"polyreason.grpo.audit": "nothing-to-audit",
                                "polyreason.grpo.audit.reason": f"every reward judges with the reference verifier "
                                                                f"{audit.reference!r}"})
        return RewardAudit(status="nothing-to-audit", reference=audit.reference)
    dataset = dataset_rows(load_rows(inputs.job.dataset), section)
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
    return RewardAudit(status=worst.status, reference=audit.reference, verifiers=verifiers, rows=len(rows),
                       vlb={verifier: result.vlb for verifier, result in results.items()})


@task(name="grpo-train", cache_policy=training_policy("training", "scoring", "rollouts"), **CACHED)
def grpo_train_task(inputs: GRPOInputs, project: Project) -> TrainedRun:
    """Launch the trainer process in the directory of this run's key (resuming only an interrupted run of the same
    key); the finished run and its weights."""
    return train_once(*training_run(project, inputs.job, grpo_train_task, *inputs.fingerprints))


@task(name="grpo-log", cache_policy=NO_CACHE)
def log_grpo_task(run: RunRef, trained: TrainedRun, dataset: str, name: str, rollout_rows: int = 0,
                  source: str | None = None) -> str:
    """Per-step curves (``grpo/...``), result numbers, the RL set as the training input, the curriculum plot and
    the first ``rollout_rows`` rollouts of each logging step as tables; every checkpoint and the trainer's adapter
    as logged models (named after ``name``, the profile). Returns the adapter's logged model id."""
    import tempfile

    from components.training.report import plot_curriculum

    records = log_training_output(run, trained, "grpo", dataset)
    with tempfile.TemporaryDirectory() as scratch:  # a file of the run, not of the published training directory
        plot = plot_curriculum(records, Path(scratch) / "curriculum.png")
        if plot is not None:
            tracking.log_artifact(run, plot, "grpo")
    log_rollout_tables(run, trained, "grpo", rollout_rows)
    return log_checkpoints(run, trained, "grpo", name, source)


@task(name="grpo-log-model", cache_policy=NO_CACHE)
def log_grpo_model_task(run: RunRef, final: FinalWeights, trained: TrainedRun, adapter_model: str, base: str,
                        name: str, source: str | None = None) -> str:
    """The GRPO model as evaluated and registered (relative to the original base) as a logged model: the trainer's
    adapter's when it is that model, else the combined adapter's files; a full model is described, not uploaded.
    On a cache hit, the one ``source`` (the run that trained it) logged. Returns its id."""
    from runtime.tracking.logged_models import log_model, source_models

    if final.weights in (trained.adapter, trained.full_model if trained.full else None):
        return adapter_model  # the trainer's own product, already logged by log_grpo_task
    logged = [m.model_id for m in source_models(run.tracking_uri, source) if m.model_type == "grpo-model"] \
        if source else []
    if logged:  # linked to this run with the source's other models (``log_grpo_task``)
        return logged[-1]
    step = trained.run.summary.get("global_step")
    full = final.kind == "full"
    return log_model(run, f"{name}-grpo-model", kind="grpo-model", step=step,
                     directory=None if full else Path(final.weights),
                     params={"base": base, "weights": final.kind, "path": final.weights},
                     tags={"polyreason.weights": "not uploaded" if full else "uploaded"})


@task(name="grpo-final-weights", cache_policy=cache_policy("adapters"), **CACHED)
def final_weights_task(trained: TrainedRun, base_path: str, sft_adapter: str | None, project: Project) -> FinalWeights:
    """The GRPO model relative to the original base: the SFT and GRPO adapters as one, or the full model.

    After a KL-triggered reference reset the trainer wrote a full merged model:
    that is the final model. Otherwise the GRPO adapter (trained on the base with
    the SFT adapter merged in) is concatenated with the SFT adapter into one adapter.
    """
    from components.training.adapters import combine_adapters

    if trained.full_model:  # after a reset, or every weight trained (lora: null)
        return FinalWeights(weights=trained.full_model, kind="full")
    if sft_adapter is None:
        return FinalWeights(weights=trained.adapter, kind="adapter")

    def combine(out: Path) -> Made:
        combine_adapters(base_path, [sft_adapter, trained.adapter], out / "adapter")
        return Made(summary={}, fingerprint=fingerprint([trained.run.fingerprint, sft_adapter]))

    combined = project.produce("grpo-final", [trained.run.fingerprint, base_path, sft_adapter], "adapter", combine)
    return FinalWeights(weights=combined.path, kind="adapter")
