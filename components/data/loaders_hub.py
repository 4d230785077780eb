"""Reading a benchmark's Hugging Face hub copy with ``datasets.load_dataset``, as its spec's ``HubSource`` says.

Used when a benchmark has no ``data_dir``. The hub is not reachable on the CI
machine, so this path is exercised only by users online; each source says
(repository, config or data files, split, revision, field mapping) so the rows
come out in the same shape as the offline files and go through the same row
parsers. Which repository holds which benchmark is the benchmark's own spec
(``components.data.benchmarks_math``, ``components.data.benchmarks_qa``).

Two layouts: a config per language (``read_hub``: MGSM, MSVAMP, MMLU-ProX, or
per-language ``data_files`` such as MMATH's ``mmath/{lang}.json``), and one
dataset holding every language (``read_hub_records``: MKQA and XOR-TyDi's parquet
conversions, which ``datasets`` 4+ reads in place of their loading scripts). A
language can come from another repository than the rest (``HubSource.elsewhere``:
language -> repository read with its default config).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from components.data.loaders_local import Record, RowError


@dataclass(frozen=True)
class HubSource:
    """Where a benchmark's hub copy is and how its rows are named."""

    repo: str
    languages: tuple[str, ...]
    split: str = "test"
    data_files: str | None = None  # a pattern with {lang}; else the language is the config name
    rename: tuple[tuple[str, str], ...] = ()  # (hub field, record field)
    elsewhere: tuple[tuple[str, str], ...] = ()  # (language, repository with that language alone)
    config: str | None = None  # one config holding every language (``read_hub_records``)
    revision: str | None = None  # a branch other than the default (a parquet conversion)

    def repositories(self) -> tuple[str, ...]:
        """Every repository the copy reads (the main one, then those of languages held elsewhere)."""
        return (self.repo, *(repo for _, repo in self.elsewhere))


def read_hub(source: HubSource, lang: str) -> Iterator[tuple[str, Record | RowError]]:
    """Rows of one language from the hub, as ``(location, record)`` like the file readers."""
    from datasets import load_dataset

    repository = dict(source.elsewhere).get(lang)
    if repository is not None:
        dataset = load_dataset(repository, split=source.split)
        for number, row in enumerate(dataset, start=1):
            yield f"hf://{repository}/{source.split}:{number}", _rename(dict(row), source.rename)
        return
    if source.data_files is not None:
        files = {source.split: source.data_files.format(lang=lang)}
        dataset = load_dataset(source.repo, data_files=files, split=source.split)
    else:
        dataset = load_dataset(source.repo, lang, split=source.split)
    for number, row in enumerate(dataset, start=1):
        yield f"hf://{source.repo}/{lang}/{source.split}:{number}", _rename(dict(row), source.rename)


def read_hub_records(source: HubSource) -> Iterator[tuple[str, dict]]:
    """Every row of a copy whose one dataset holds all languages (its ``config``, ``revision`` and ``split``)."""
    from datasets import load_dataset

    options = {"revision": source.revision} if source.revision else {}
    if source.config is not None:
        dataset = load_dataset(source.repo, source.config, split=source.split, **options)
    else:
        dataset = load_dataset(source.repo, split=source.split, **options)
    for number, row in enumerate(dataset, start=1):
        yield f"hf://{source.repo}:{number}", _rename(dict(row), source.rename)


def _rename(row: dict[str, Any], rename: tuple[tuple[str, str], ...]) -> Record:
    for hub_field, field in rename:
        if hub_field in row:
            row[field] = row.pop(hub_field)
    return row
