"""Prefect tasks of the data-construction stage: thin adapters over ``components.data.datasets``.

Cache keys (``runtime.cache.policy``): the task's settings section, the fingerprints of
its upstream tables and models (never the whole profile), the task source and
the source of the components it calls. Outputs go to content-addressed
``artifacts/data/<step>/<fp[:12]>/``, each built under the directory's write
lock and published with the row count and checksum of every table
(``runtime.artifacts``). Sampled generation is keyed with its seed (inside
``SamplingSettings``); API calls are cached besides, per request.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from prefect import task
from prefect.cache_policies import NO_CACHE

from components.config import fingerprint
from components.settings import DataSourceSettings, ModelSettings, RejectionSettings, TraceSettings, TranslationSettings
from runtime import tracking
from runtime.artifacts import ArtifactRef, file_fingerprint
from runtime.cache.policy import CACHED, cache_policy
from runtime.outputs import ModelRef, StepReport
from runtime.project import Made, Project
from runtime.tracking import RunRef

DATA_STAGES = ("data", "generation", "scoring")  # the data builders generate (teacher, translator) and filter


def tables(build: Callable[[Path], dict]) -> Callable[[Path], Made]:
    """A step's work whose product is every parquet table it writes into its directory."""
    return lambda out: Made(build(out), files=sorted(out.glob("*.parquet")))


@task(name="data-model-identity", cache_policy=NO_CACHE)
def model_identity_task(model: ModelSettings | None, project: Project) -> str:
    """Cache identity of a generator: settings + weight files for local backends (embedded model converted once)."""
    from components.data.datasets import LOCAL_BACKENDS
    from components.generation.base import EMBEDDED_PREFIX, model_fingerprint, resolve_model
    from components.generation.embedded import ensure_embedded_model

    if model is None or model.backend not in LOCAL_BACKENDS:
        return fingerprint(model.model_dump(mode="json", exclude={"api_key_env"}) if model else None)
    if model.model.startswith(EMBEDDED_PREFIX):
        ensure_embedded_model(project.cache_dir)
    resolved = resolve_model(model, project.cache_dir)
    return model_fingerprint(model, resolved.path if resolved.local else None)


@task(name="data-file-identity", cache_policy=NO_CACHE)
def file_identity_task(path: str | None) -> str:
    """Content hash of a local input file (a source or a traces file; a hub dataset is named by its settings)."""
    return file_fingerprint(path) if path else "hub"


@task(name="data-source", cache_policy=cache_policy(*DATA_STAGES), **CACHED)
def source_task(source: DataSourceSettings, identity: str, project: Project) -> ArtifactRef:
    """Read and check the English source problems."""
    from components.data.datasets import build_source

    return project.produce("data/source", [source, identity], "source.parquet",
                           tables(lambda out: build_source(source, out)))


@task(name="data-translate", cache_policy=cache_policy(*DATA_STAGES), **CACHED)
def translate_task(settings: TranslationSettings, source_settings: DataSourceSettings, languages: list[str],
                   source_language: str, source: ArtifactRef, models: list[str], project: Project) -> ArtifactRef:
    """Translate into every target language with gates (and chrF against references)."""
    from components.data.datasets import build_translations

    identity = [settings, source_settings, languages, source_language, source.fingerprint, models]
    return project.produce("data/translations", identity, "translations.parquet", tables(
        lambda out: build_translations(settings, source_settings, languages, source_language, Path(source.path), out,
                                       project.cache_dir)))


@task(name="data-traces", cache_policy=cache_policy(*DATA_STAGES), **CACHED)
def traces_task(settings: TraceSettings, languages: list[str], translations: ArtifactRef, model: str,
                project: Project) -> ArtifactRef:
    """Teacher traces, filtered; the kept triplets are the SFT set."""
    from components.data.datasets import build_traces

    return project.produce("data/traces", [settings, languages, translations.fingerprint, model], "sft.parquet",
                           tables(lambda out: build_traces(settings, languages, Path(translations.path), out,
                                                           project.cache_dir)))


@task(name="data-traces-from-file", cache_policy=cache_policy(*DATA_STAGES), **CACHED)
def traces_from_file_task(settings: TraceSettings, languages: list[str], identity: str,
                          project: Project) -> ArtifactRef:
    """Traces written beforehand, filtered like generated ones; the kept triplets are the SFT set."""
    from components.data.datasets import build_traces_from_file

    return project.produce("data/traces", [settings, languages, identity], "sft.parquet",
                           tables(lambda out: build_traces_from_file(settings, languages, out)))


@task(name="data-rejection-sampling", cache_policy=cache_policy(*DATA_STAGES), **CACHED)
def rl_set_task(settings: RejectionSettings, verifier: str, languages: list[str], sft_data: ArtifactRef,
                policy: ModelRef, project: Project) -> ArtifactRef:
    """Sample the policy, select by strategy, cap per language, hold out validation."""
    from components.data.datasets import build_rl_set

    identity = [settings, verifier, languages, sft_data.fingerprint, policy.fingerprint]
    return project.produce("data/rl", identity, "rl_train.parquet", tables(
        lambda out: build_rl_set(settings, verifier, languages, Path(sft_data.path), policy.model, out,
                                 project.cache_dir)))


KEPT = {  # step -> (summary count of what it kept, the per-language report to show when it kept nothing)
    "source": ("rows", "problems"), "translation": ("accepted", "languages"), "traces": ("sft_rows", "retention"),
    "rejection": ("train", "languages"),
}


@task(name="data-log", cache_policy=NO_CACHE)
def log_step_task(run: RunRef, step: str, ref: ArtifactRef) -> StepReport:
    """Every parquet table of one step as an MLflow dataset input (with digest) + its metrics.

    A step that kept nothing stops the stage here, after its report is logged, with
    the per-language report in the message (``NothingKeptError``).
    """
    import pandas as pd

    from components.data.datasets import require_rows, summary_metrics

    digests = {}
    for path in sorted(Path(ref.path).parent.glob("*.parquet")):
        name = f"{step}/{path.stem}"
        context = "training" if path.stem in ("sft", "rl_train") else "data"
        digests[name] = tracking.log_dataset_input(run, pd.read_parquet(path), name, str(path), context=context)
        tracking.log_artifact(run, path, f"data/{step}")
    tracking.log_metrics(run, summary_metrics("data", step, ref.summary))
    if step in KEPT:
        count, report = KEPT[step]
        require_rows(ref.summary[count], step, {"problems": ref.summary[report]} if step == "source" else ref.summary[report])
    return StepReport(path=ref.path, summary=ref.summary, digests=digests)
