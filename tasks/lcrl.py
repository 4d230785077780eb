"""Prefect tasks of LcRL's inputs to the GRPO stage: the QA training set and the retrieval index.

``lcrl_section`` is what the GRPO flow calls: without ``grpo.lcrl`` the section
is returned as it is; with it, the QA rows (when ``grpo.dataset`` is unset) and
the retrieval index (when ``lcrl.retrieval.index`` is unset) are built by the
two cached tasks below and filled into the section the trainer reads.

Both are cached like any stage output: the key is the settings section, the
corpus file's fingerprint and the source of the components called, and the
output lives in a content-addressed directory (``artifacts/lcrl-data/…``,
``artifacts/retrieval/…``), so an index is built once per corpus and settings
and every later GRPO run (or a re-run after a kill) reads the same one.
"""

from __future__ import annotations

from pathlib import Path

from prefect import task

from components.config import fingerprint
from components.settings import BenchmarkSettings, GRPOStageSettings, RetrievalSettings
from tasks.artifacts import writing
from tasks.caching import CACHED, ArtifactRef, artifact_dir, component_cache_policy, file_fingerprint


@task(name="lcrl-qa-dataset", cache_policy=component_cache_policy("components.data.benchmarks_qa",
                                                                 "components.data.qa_dataset"), **CACHED)
def qa_dataset_task(benchmark: BenchmarkSettings, project_dir: str) -> ArtifactRef:
    """A QA benchmark as GRPO rows (search instruction, gold, aliases) in ``qa.jsonl``."""
    from components.data.benchmarks import load_benchmark
    from components.data.qa_dataset import write_qa_dataset

    loaded = load_benchmark(benchmark.name, data_dir=benchmark.data_dir, languages=benchmark.languages,
                            limit=benchmark.limit, selection=benchmark.selection, sample_seed=benchmark.sample_seed)
    path = artifact_dir(project_dir, "lcrl-data", fingerprint(benchmark)) / "qa.jsonl"
    with writing(path.parent) as slot:  # one writer; a concurrent run reuses the finished file
        if (done := slot.reuse(path)) is not None:
            return done
        summary = write_qa_dataset(loaded.items, path)
        return slot.publish(path, {**summary, "errors": loaded.errors[:50]})


@task(name="retrieval-index", cache_policy=component_cache_policy("components.retrieval"), **CACHED)
def retrieval_index_task(retrieval: RetrievalSettings, corpus_fingerprint: str, project_dir: str) -> ArtifactRef:
    """Per-language indexes of the corpus under ``artifacts/retrieval/<fp>/`` (``components.retrieval``)."""
    from components.retrieval import build_index

    out = artifact_dir(project_dir, "retrieval", fingerprint([retrieval, corpus_fingerprint]))
    with writing(out) as slot:  # one writer; a concurrent run reuses the finished index
        if (done := slot.reuse(out)) is not None:
            return done
        meta = build_index(retrieval, out)
        files = [path for path in sorted(out.rglob("*")) if path.is_file() and not path.name.startswith(".")]
        return slot.publish(out, meta, files=files, fingerprint=file_fingerprint(out / "meta.json"))


def corpus_fingerprint(retrieval: RetrievalSettings) -> str:
    """Fingerprint of the corpus file the index is built from (the packaged one when unset)."""
    from components.retrieval import default_corpus

    return file_fingerprint(retrieval.corpus or default_corpus())


def lcrl_section(section: GRPOStageSettings, project_dir: str) -> GRPOStageSettings:
    """The GRPO section with LcRL's QA rows and retrieval index filled in (unchanged without ``lcrl``)."""
    lcrl = section.lcrl
    if lcrl is None:
        return section
    dataset, retrieval = section.dataset, lcrl.retrieval
    if dataset is None and lcrl.dataset is not None:
        dataset = qa_dataset_task(lcrl.dataset, project_dir).path
    if retrieval.index is None:
        index = retrieval_index_task(retrieval, corpus_fingerprint(retrieval), project_dir)
        retrieval = retrieval.model_copy(update={"index": index.path})
    return section.model_copy(update={"dataset": dataset, "lcrl": lcrl.model_copy(update={"retrieval": retrieval})})
