"""Hugging Face hub models and datasets, pinned to the commit a run read.

A hub id (``Qwen/Qwen2.5-0.5B``, ``juletxara/mgsm``) names a repository that
moves; what a task read is one commit of it. ``revisions`` finds the hub
references in a task's inputs and resolves each to a commit hash the first time
this process meets it (a run starts by computing its keys, so that is when):

* online, through ``huggingface_hub.HfApi().model_info(...).sha`` /
  ``dataset_info(...).sha``, the commit of the default branch the libraries
  will download;
* offline (``HF_HUB_OFFLINE``) or when the hub cannot be reached, from the local
  cache: ``snapshot_download(..., local_files_only=True)`` returns the snapshot
  directory of the cached ``main`` ref, named by its commit hash;
* neither: ``unresolved``, which still differs from any commit, so a later
  resolvable run does not reuse it.

The hash enters the task's key and the stage's MLflow run (tags
``revision.model.<repo>`` / ``revision.dataset.<repo>``). Local directories and
the embedded model are identified by their files instead (the model
fingerprint, ``runtime.cache.file_inputs``).

Hub references in settings: a model section's ``model`` read by transformers
or vLLM that is no local path, a benchmark read from its hub copy
(its spec's ``hub``, ``components.data.benchmarks``, other-language repositories
too), a data source's ``hub`` and a dense retriever's encoder.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any


UNRESOLVED = "unresolved"
HUB_BACKENDS = ("transformers", "vllm")


def revisions(value: Any) -> dict[str, str]:
    """``<kind>:<repo>`` -> commit hash of every hub model and dataset a task's inputs name."""
    return {f"{kind}:{repo}": revision(kind, repo) for kind, repo in sorted(set(hub_references(value)))}


def revision_tags(resolved: dict[str, str]) -> dict[str, str]:
    """MLflow tags for resolved revisions: ``revision.model.Qwen/Qwen2.5-0.5B`` -> commit hash."""
    return {f"revision.{key.replace(':', '.', 1)}": sha for key, sha in sorted(resolved.items())}


def hub_references(value: Any) -> list[tuple[str, str]]:
    """``(kind, repo)`` for every hub repository named in settings inside ``value`` (nested too)."""
    from components.settings import BenchmarkSettings, ModelSettings
    from runtime.cache.settings_walk import gather

    return gather(value, lambda section: _own_references(section, BenchmarkSettings, ModelSettings))


def _own_references(section, benchmark_type, model_type):
    stored = section.__dict__
    if isinstance(section, model_type):
        if stored["backend"] in HUB_BACKENDS and is_hub_id(stored["model"]):
            yield "model", stored["model"]
    elif isinstance(section, benchmark_type):
        yield from benchmark_repositories(section)
    if isinstance(stored.get("hub"), str):  # a data source read from the hub
        yield "dataset", stored["hub"]
    if stored.get("retriever") == "dense" and isinstance(stored.get("model"), str) and is_hub_id(stored["model"]):
        yield "model", stored["model"]


def benchmark_repositories(benchmark) -> list[tuple[str, str]]:
    """The hub repositories a benchmark's rows come from (none when every language is read from ``data_dir``)."""
    from components.data.benchmarks import BENCHMARKS

    if benchmark.data_dir is not None and not benchmark.hub_languages:
        return []
    source = BENCHMARKS[benchmark.name].hub if benchmark.name in BENCHMARKS else None
    return [] if source is None else [("dataset", repo) for repo in source.repositories()]


def is_hub_id(name: str) -> bool:
    """``org/name`` that is no local path, registry reference or embedded model."""
    if not name or ":" in name or name.startswith(("/", ".", "~")) or name.count("/") != 1:
        return False
    return not Path(name).expanduser().exists()


@lru_cache(maxsize=None)
def revision(kind: str, repo: str) -> str:
    """The commit ``repo`` (``kind``: ``model`` or ``dataset``) stands for now; resolved once per process."""
    from huggingface_hub import constants

    if not constants.HF_HUB_OFFLINE:
        try:
            return online_revision(kind, repo)
        except Exception:  # noqa: BLE001 - unreachable hub, unknown repo: the local cache may still know it
            pass
    return cached_revision(kind, repo)


def online_revision(kind: str, repo: str) -> str:
    from huggingface_hub import HfApi

    api = HfApi()
    info = api.model_info(repo) if kind == "model" else api.dataset_info(repo)
    return info.sha or UNRESOLVED


def cached_revision(kind: str, repo: str) -> str:
    """The commit of the cached ``main`` snapshot of ``repo`` (``unresolved`` when the cache has none)."""
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo, repo_type=kind, local_files_only=True)).name
    except Exception:  # noqa: BLE001 - not cached: no revision to name
        return UNRESOLVED
