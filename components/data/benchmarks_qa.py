"""Open-domain multilingual QA benchmarks of LcRL: MKQA, XOR-TyDi (hub or local), and the packaged offline set.

Items carry every accepted answer (``BenchmarkItem.answers``, gold first) and
an id shared by the languages of one question, so rows couple across languages.

- ``mkqa`` (Longpre et al., 2020): 10k Natural Questions queries in 26 language
  variants. One record holds all languages: ``queries[code]`` and
  ``answers[code]``, a list of ``{type, entity, text, aliases}``. ``zh_cn`` is
  read as ``zh`` (the traditional variants ``zh_hk``/``zh_tw`` are not offered,
  ISO 639-1 has one code). Answers without text (``unanswerable``,
  ``long_answer``) make the item not applicable: it is skipped silently, as the
  released LcRL data script drops them. Hub: ``apple/mkqa`` is a script
  dataset, which ``datasets`` 4+ no longer runs, so its parquet conversion is
  read (``revision="refs/convert/parquet"``, split ``train``, the only one);
  there ``answers[code]`` may come as a dict of lists (the ``datasets``
  ``Sequence(dict)`` layout), also accepted. Local: ``mkqa.jsonl`` or
  ``mkqa.jsonl.gz`` (the upstream file) in ``data_dir``.
- ``xor_tydi`` (Asai et al., 2021), XOR-Full: questions written natively in ar,
  bn, fi, ja, ko, ru, te with short answers; one record per question
  (``id``, ``question``, ``answers``, ``lang``). Hub: ``akariasai/xor_tydi_qa``
  config ``xor-full`` (parquet conversion), split ``validation`` (the dev set
  papers report; test answers are hidden); its ``answers`` is a string, read as
  a JSON list when it is one. ``lang`` may be a code or a ClassLabel index.
  Local: ``*.jsonl`` in ``data_dir`` (e.g. ``xor_dev_full_v1_1.jsonl``).
  XOR-TyDi questions are not parallel: ids do not couple across languages.
- ``offline_qa``: 24 facts in en/fr/de/es/ja/zh written for offline tests, with a
  passage corpus (``components/data/offline_qa``, see its PROVENANCE.md).

Each is one ``BenchmarkSpec`` of kind ``qa`` (scored by the QA metrics, answered with the
search loop), built by ``qa_benchmark`` from its row reader, languages, local file patterns
and hub copy. Bad rows are reported as ``FILE:LINE: field F: problem`` and skipped.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Iterator

from components.data.benchmark_spec import BenchmarkSpec, LoadResult, Selection, select
from components.data.loaders_hub import HubSource, read_hub_records
from components.data.loaders_local import RowError, decode_object, read_lines
from components.records import BenchmarkItem

OFFLINE_QA_DIR = Path(__file__).resolve().parent / "offline_qa"
MKQA_LANGUAGES = {
    "ar": "ar", "da": "da", "de": "de", "en": "en", "es": "es", "fi": "fi", "fr": "fr", "he": "he", "hu": "hu",
    "it": "it", "ja": "ja", "km": "km", "ko": "ko", "ms": "ms", "nl": "nl", "no": "no", "pl": "pl", "pt": "pt",
    "ru": "ru", "sv": "sv", "th": "th", "tr": "tr", "vi": "vi", "zh": "zh_cn",
}  # ISO 639-1 -> MKQA key  # fmt: skip
XOR_TYDI_LANGUAGES = ("ar", "bn", "fi", "ja", "ko", "ru", "te")


class RowProblem(ValueError):
    """One unusable row: the field and what is wrong with it."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"field {field}: {problem}")


# ---------------------------------------------------------------- answers


def mkqa_answers(entries: Any) -> list[str]:
    """Answer texts then aliases of one MKQA language entry (list of dicts, or dict of lists).

    >>> mkqa_answers([{"type": "entity", "text": "Paris", "aliases": ["Paname"]}, {"type": "unanswerable", "text": None}])
    ['Paris', 'Paname']
    >>> mkqa_answers({"type": [0], "text": ["東京"], "aliases": [["東京都"]]})
    ['東京', '東京都']
    """
    if isinstance(entries, dict):  # datasets' Sequence(dict) layout: one list per field
        count = len(entries.get("text") or [])
        entries = [{k: (v[i] if v is not None and i < len(v) else None) for k, v in entries.items()}
                   for i in range(count)]
    texts: list[str] = []
    for entry in entries or []:
        for value in [entry.get("text"), *(entry.get("aliases") or [])]:
            if value is not None and str(value).strip() and str(value).strip() not in texts:
                texts.append(str(value).strip())
    return texts


def xor_answers(value: Any) -> list[str]:
    """XOR-TyDi answers: a list, a JSON list in a string, or one answer string.

    >>> xor_answers('["1990", "1990年"]'), xor_answers("Helsinki")
    (['1990', '1990年'], ['Helsinki'])
    """
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                value = [text]
        else:
            value = [text]
    return [str(v).strip() for v in value or [] if v is not None and str(v).strip()]


# ---------------------------------------------------------------- records -> items


def qa_item(benchmark: str, key: Any, lang: str, question: Any, answers: list[str]) -> BenchmarkItem:
    """One item; ``RowProblem`` names the bad field."""
    if question is None or not str(question).strip():
        raise RowProblem("question", "missing or empty")
    if not answers:
        raise RowProblem("answers", "no answer text")
    return BenchmarkItem(f"{benchmark}-{key}", benchmark, lang, str(question).strip(), answers[0],
                         answers=tuple(answers))


def mkqa_item(record: dict, lang: str) -> BenchmarkItem | None:
    """The ``lang`` item of one MKQA record; ``None`` when that language has no short answer."""
    code = MKQA_LANGUAGES[lang]
    answers = mkqa_answers((record.get("answers") or {}).get(code))
    if not answers:
        return None
    return qa_item("mkqa", record.get("example_id"), lang, (record.get("queries") or {}).get(code), answers)


def xor_item(record: dict, lang: str, index: int) -> BenchmarkItem | None:
    """The item of one XOR-TyDi record when it is in ``lang``."""
    code = record.get("lang")
    code = XOR_TYDI_LANGUAGES[code] if isinstance(code, int) and 0 <= code < len(XOR_TYDI_LANGUAGES) else code
    if code != lang:
        return None
    return qa_item("xor_tydi", record.get("id", index), lang, record.get("question"), xor_answers(record.get("answers")))


def offline_item(record: dict, lang: str) -> BenchmarkItem | None:
    """The item of one offline-set row when it is in ``lang``."""
    if record.get("lang") != lang:
        return None
    answers = [str(a).strip() for a in record.get("answers") or [] if str(a).strip()]
    item = qa_item("offline_qa", record.get("id"), lang, record.get("question"), answers)
    return BenchmarkItem(str(record["id"]), item.benchmark, lang, item.question, item.gold, answers=item.answers)


# ---------------------------------------------------------------- sources


def read_jsonl_records(path: Path) -> Iterator[tuple[str, dict | None, str | None]]:
    """``(FILE:LINE, record, problem)`` for each line of a JSONL file (gzip when it ends in ``.gz``)."""
    for number, line, undecodable in read_lines(path, gzip.open if path.suffix == ".gz" else None):
        if not line.strip():
            continue
        record = decode_object(line, undecodable)
        if isinstance(record, RowError):
            yield f"{path}:{number}", None, f"field {record.field}: {record.problem}"
        else:
            yield f"{path}:{number}", record, None


def local_records(name: str, data_dir: str | Path, patterns: tuple[str, ...]) -> Iterator[tuple[str, dict | None,
                                                                                           str | None]]:
    """Records of the local copy of ``name`` in ``data_dir``: its files matching ``patterns``."""
    directory = Path(data_dir)
    if not directory.is_dir():
        raise ValueError(f"{name}: data_dir {directory} is not a directory")
    files = sorted({p for pattern in patterns for p in directory.glob(pattern)})
    if not files:
        raise ValueError(f"{name}: no {' or '.join(patterns)} in {directory}")
    for path in files:
        yield from read_jsonl_records(path)


def hub_records(name: str, hub: HubSource | None) -> Iterator[tuple[str, dict | None, str | None]]:
    """Records of the hub copy (parquet conversions; needs the network)."""
    if hub is None:
        raise ValueError(f"{name}: no hub copy; it is packaged (data_dir: null reads the packaged files)")
    for location, row in read_hub_records(hub):
        yield location, row, None


# ---------------------------------------------------------------- specs

ItemReader = Callable[[dict, str, int], "BenchmarkItem | None"]


def read_qa(name: str, item: ItemReader, known: tuple[str, ...], patterns: tuple[str, ...], hub: HubSource | None,
            data_dir: str | None, languages: list[str]) -> tuple[dict[str, list[BenchmarkItem]], list[str]]:
    """Items of QA benchmark ``name`` per language, and one ``LOCATION: field F: problem`` line per bad row."""
    wanted = list(languages or known)
    unknown = [lang for lang in wanted if lang not in known]
    if unknown:
        raise ValueError(f"{name}: unknown language(s) {', '.join(unknown)}; available: {', '.join(known)}")
    records = list(local_records(name, data_dir, patterns) if data_dir is not None else hub_records(name, hub))
    per_lang: dict[str, list[BenchmarkItem]] = {lang: [] for lang in wanted}
    errors: list[str] = []
    for index, (location, record, problem) in enumerate(records):
        for lang in wanted:
            try:
                found = item(record, lang, index) if record is not None else None
            except RowProblem as error:
                problem, found = problem or str(error), None
            if found is not None:
                per_lang[lang].append(found)
        if problem:  # reported once per row, not once per language
            errors.append(f"{location}: {problem}")
    return per_lang, errors


def qa_benchmark(name: str, item: ItemReader, languages: tuple[str, ...], patterns: tuple[str, ...], *,
                 hub: HubSource | None = None, packaged: Path | None = None) -> BenchmarkSpec:
    """The spec of an open-domain QA benchmark: ``item`` reads a record in one language, local copies are the
    files ``patterns`` match, ``packaged`` the directory read when ``data_dir`` is unset and there is no hub."""

    def read(data_dir: str | None, wanted: list[str]) -> tuple[dict[str, list[BenchmarkItem]], list[str]]:
        directory = str(packaged) if data_dir is None and packaged is not None else data_dir
        return read_qa(name, item, languages, patterns, hub, directory, wanted)

    def load(*, data_dir: str | None = None, languages: list[str] | None = None, limit: int | None = None,
             selection: Selection = "first", sample_seed: int = 0,
             hub_languages: list[str] | None = None, offset: int = 0) -> LoadResult:
        wanted, from_hub = list(languages or []), list(hub_languages or [])
        local = [lang for lang in wanted if lang not in from_hub] if data_dir else wanted
        per_lang, errors = read(data_dir, local) if local or not from_hub else ({}, [])
        if data_dir and from_hub:  # these languages come from the hub copy even though a local directory is given
            hub_items, hub_errors = read(None, [lang for lang in wanted if lang in from_hub])
            per_lang, errors = per_lang | hub_items, errors + hub_errors
        return LoadResult([found for items in per_lang.values()
                           for found in select(items, limit=limit, selection=selection, sample_seed=sample_seed,
                                               offset=offset)], errors)

    def local_languages(directory: Path) -> list[str]:  # one file holds every language of the copy
        return sorted(languages) if any(any(directory.glob(pattern)) for pattern in patterns) else []

    load.__name__ = f"load_{name}"
    return BenchmarkSpec(name, load, local_languages, hub=hub, kind="qa", packaged=packaged)


MKQA = qa_benchmark("mkqa", lambda record, lang, index: mkqa_item(record, lang), tuple(MKQA_LANGUAGES),
                    ("mkqa.jsonl", "mkqa.jsonl.gz"),
                    hub=HubSource("apple/mkqa", tuple(MKQA_LANGUAGES), split="train", revision="refs/convert/parquet"))
XOR_TYDI = qa_benchmark("xor_tydi", xor_item, XOR_TYDI_LANGUAGES, ("*.jsonl",),
                        hub=HubSource("akariasai/xor_tydi_qa", XOR_TYDI_LANGUAGES, split="validation",
                                      config="xor-full", revision="refs/convert/parquet"))
OFFLINE_QA = qa_benchmark("offline_qa", lambda record, lang, index: offline_item(record, lang),
                          ("en", "fr", "de", "es", "ja", "zh"), ("questions.jsonl",), packaged=OFFLINE_QA_DIR)
QA_SPECS = (MKQA, XOR_TYDI, OFFLINE_QA)
