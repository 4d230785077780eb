"""Prefect tasks of LcRL: the QA training set, the retrieval index, and QA generation with the search loop.

With ``grpo.lcrl`` the GRPO flow builds the QA rows (when ``grpo.dataset`` is
unset) and the retrieval index (when ``lcrl.retrieval.index`` is unset) with the
cached tasks below, and fills them into the section the trainer reads. With
``evaluation.search`` the evaluation flow builds the index the same way and
generates each QA benchmark through ``search_generate_task``: the loaded
generator wrapped in the test-time search loop (``components.generation.search_generator``),
written by the same resumable JSONL writer as every other benchmark.

Both are cached like any stage output: the key is the settings section, the
corpus file's fingerprint and the source of the components called, and the
output lives in a content-addressed directory (``artifacts/lcrl-data/…``,
``artifacts/retrieval/…``), so an index is built once per corpus and settings
and every later GRPO run (or a re-run after a kill) reads the same one.
"""

from __future__ import annotations

from pathlib import Path

from prefect import task

from components.settings import BenchmarkSettings, RetrievalSettings, SamplingSettings, SearchSettings
from runtime.artifacts import ArtifactRef, file_fingerprint
from runtime.cache.policy import CACHED, cache_policy
from runtime.processes.generators import generator_for
from runtime.outputs import ModelRef
from runtime.project import Made, Project


@task(name="lcrl-qa-dataset", cache_policy=cache_policy("benchmarks"), **CACHED)
def qa_dataset_task(benchmark: BenchmarkSettings, project: Project) -> ArtifactRef:
    """A QA benchmark as GRPO rows (search instruction, gold, aliases) in ``qa.jsonl``."""
    from components.data.benchmarks import load_configured_benchmark
    from components.data.qa_dataset import write_qa_dataset

    def write(out: Path) -> dict:
        loaded = load_configured_benchmark(benchmark)
        return {**write_qa_dataset(loaded.items, out / "qa.jsonl"), "errors": loaded.errors[:50]}

    return project.produce("lcrl-data", benchmark, "qa.jsonl", write)


@task(name="retrieval-index", cache_policy=cache_policy("retrieval"), **CACHED)
def retrieval_index_task(retrieval: RetrievalSettings, corpus_fingerprint: str, project: Project) -> ArtifactRef:
    """Per-language indexes of the corpus under ``artifacts/retrieval/<fp>/`` (``components.retrieval``)."""
    from components.retrieval import build_index

    def build(out: Path) -> Made:
        return Made(summary=build_index(retrieval, out), fingerprint=file_fingerprint(out / "meta.json"))

    return project.produce("retrieval", [retrieval, corpus_fingerprint], ".", build)


def corpus_fingerprint(retrieval: RetrievalSettings) -> str:
    """Fingerprint of the corpus file the index is built from (the packaged one when unset)."""
    from components.retrieval import default_corpus

    return file_fingerprint(retrieval.corpus or default_corpus())


@task(name="search-generate", cache_policy=cache_policy("generation", "retrieval"), **CACHED)
def search_generate_task(items: list[dict], prompts: list[str], model: ModelRef, sampling: SamplingSettings,
                         search: SearchSettings, index: ArtifactRef, project: Project) -> ArtifactRef:
    """A QA benchmark's samples, each answered with the search loop over the index, into a resumable JSONL."""
    from components.generation.base import load_tokenizer
    from components.generation.resumable import generate_to_jsonl
    from components.generation.search_generator import SearchGenerator
    from components.records import BenchmarkItem
    from components.retrieval import load_retriever
    from tasks.evaluation import GENERATIONS, journal_progress

    def generate(out: Path) -> dict:
        records = [BenchmarkItem.from_dict(item) for item in items]
        generator = generator_for(model, project.cache_dir)
        tokenizer = getattr(generator, "tokenizer", None) or load_tokenizer(model.model, project.cache_dir)
        searcher = SearchGenerator(generator, load_retriever(index.path, search.retrieval), search,
                                   {prompt: item.lang for prompt, item in zip(prompts, records)}, tokenizer)
        return generate_to_jsonl(searcher, records, prompts, sampling, out / GENERATIONS).to_dict()

    identity = {"items": items, "prompts": prompts, "model": model.fingerprint, "sampling": sampling,
                "search": search, "index": index.fingerprint}
    return project.produce("generation", identity, GENERATIONS, generate,
                           progress=lambda out: journal_progress(out / GENERATIONS, len(prompts) * sampling.n))
