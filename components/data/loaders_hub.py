"""Hugging Face hub copies of the benchmarks, read with ``datasets.load_dataset``.

Used when a benchmark has no ``data_dir``. The hub is not reachable on the CI
machine, so this path is exercised only by users online; each source is a
(repo, config/data_files, split, field mapping) entry so the rows come out in
the same shape as the offline files and go through the same row parsers.

- MGSM: ``juletxara/mgsm``, config = language, split ``test``; gold is
  ``answer_number`` (``answer`` holds the CoT only in the train split).
- MSVAMP: ``Mathoctopus/MSVAMP``, config = language, split ``test``
  (fields ``m_query``/``response`` as in the MathOctopus files).
- MMATH: ``RUC-AIBOX/MMATH``, the per-language JSON files of the RUCAIBox/MMATH
  layout (``mmath/<lang>.json``) read through ``data_files``.
- MMLU-ProX: ``li-lab/MMLU-ProX``, config = language, split ``test``.
- MGSM-Rev2: ``lightonai/mgsm-rev2`` (the 11 MGSM languages, config = language,
  split ``test``, gold ``answer_number``: the copy lighteval's ``mgsm-rev2`` task
  reads). MGSM-Rev2 has no Korean; AdaMame reports Korean MGSM-Rev2 numbers from
  an unpublished translation, so ``ko`` reads ``freewheelin/mgsm_ko`` (a Korean
  translation of the original MGSM, same fields): a stand-in, not the paper's
  test set.

A language can come from another repository than the rest (``HubSource.elsewhere``:
language -> repository read with its default config).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from components.data.loaders_local import Record, RowError


@dataclass(frozen=True)
class HubSource:
    repo: str
    languages: tuple[str, ...]
    split: str = "test"
    data_files: str | None = None  # a pattern with {lang}; else the language is the config name
    rename: tuple[tuple[str, str], ...] = ()  # (hub field, record field)
    elsewhere: tuple[tuple[str, str], ...] = ()  # (language, repository with that language alone)


HUB_SOURCES: dict[str, HubSource] = {
    "mgsm": HubSource(
        "juletxara/mgsm",
        ("en", "es", "fr", "de", "ru", "zh", "ja", "th", "sw", "bn", "te"),
        rename=(("answer_number", "answer"),),
    ),
    "mgsm_rev2": HubSource(
        "lightonai/mgsm-rev2",
        ("en", "es", "fr", "de", "ru", "zh", "ja", "th", "sw", "bn", "te", "ko"),
        rename=(("answer_number", "answer"),),
        elsewhere=(("ko", "freewheelin/mgsm_ko"),),
    ),
    "msvamp": HubSource("Mathoctopus/MSVAMP", ("en", "es", "fr", "de", "ru", "zh", "ja", "th", "sw", "bn")),
    "mmath": HubSource(
        "RUC-AIBOX/MMATH",
        ("ar", "en", "es", "fr", "ja", "ko", "pt", "th", "vi", "zh"),
        data_files="mmath/{lang}.json",
    ),
    "mmlu_prox_math": HubSource(
        "li-lab/MMLU-ProX",
        (
            "af", "ar", "bn", "cs", "de", "en", "es", "fr", "hi", "hu", "id", "it", "ja", "ko", "mr",
            "ne", "pt", "ru", "sr", "sw", "te", "th", "uk", "ur", "vi", "wo", "yo", "zh", "zu",
        ),
    ),
}


def hub_languages(benchmark: str) -> tuple[str, ...]:
    """Languages the hub copy of ``benchmark`` has."""
    return _source(benchmark).languages


def read_hub(benchmark: str, lang: str) -> Iterator[tuple[str, Record | RowError]]:
    """Rows of one language from the hub, as ``(location, record)`` like the file readers."""
    from datasets import load_dataset

    source = _source(benchmark)
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


def _rename(row: dict[str, Any], rename: tuple[tuple[str, str], ...]) -> Record:
    for hub_field, field in rename:
        if hub_field in row:
            row[field] = row.pop(hub_field)
    return row


def _source(benchmark: str) -> HubSource:
    if benchmark not in HUB_SOURCES:
        raise ValueError(
            f"{benchmark}: no Hugging Face hub copy is known; set data_dir to a local copy "
            f"(hub copies exist for: {', '.join(sorted(HUB_SOURCES))})"
        )
    return HUB_SOURCES[benchmark]
