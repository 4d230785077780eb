"""Benchmark loaders: one registry, name -> loader with explicit keyword parameters.

Benchmarks (each offline copy carries a PROVENANCE.md that says where it came from):

- ``mgsm`` (Shi et al., 2022) and ``mgsm_rev2`` (Peter et al., 2025): ``mgsm_<lang>.tsv``,
  ``question<TAB>answer``, no header, no quoting; four answers carry thousands
  commas (``2,125``), stripped here.
- ``msvamp`` (Chen et al., 2024, MathOctopus): ``test_<Language>.json``, JSON Lines;
  ``m_query`` is the question, ``response`` a float string (``"8.0"`` -> gold ``"8"``).
- ``mmath`` (RUCAIBox): ``<lang>.json`` arrays; ``data_source`` (MATH500, AIME2024,
  AIME2025, CNMO) is kept as ``source`` since MMATH accuracy is the macro average
  over sources (the scorer's job); ``gid`` is the cross-language id.
- ``mmlu_prox_math`` (li-lab/MMLU-ProX): ``question``, ``option_0..option_9``,
  ``answer`` (letter), ``answer_index``, ``category``, ``src``; only ``category == "math"``.
  Local copies: ``<lang>.parquet|.jsonl`` or ``<lang>/*.parquet|*.jsonl``.

Without ``data_dir`` a benchmark is read from its Hugging Face hub copy
(``components.data.loaders_hub``); ``hub_languages`` reads only those languages
from the hub and the rest from ``data_dir``.

Ids are ``<benchmark>-<row index>`` (MMATH: ``gid``; MMLU-ProX: ``question_id``), so
the same problem shares its id across languages. A malformed row goes to
``LoadResult.errors`` as ``FILE:LINE: field F: problem`` and is skipped.

>>> parse_number_gold("2,125")
'2125'
>>> parse_number_gold("8.0")
'8'
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Literal

from components.data import loaders_hub
from components.data import benchmarks_qa
from components.data.loaders_local import Record, RowError, read_records, read_tsv
from components.records import OPTION_LETTERS, BenchmarkItem

if TYPE_CHECKING:  # a registry module: a runtime import of settings would close a cycle (settings look it up)
    from components.settings import BenchmarkSettings

Selection = Literal["first", "sample"]
MSVAMP_FILES = {
    "en": "English", "es": "Spanish", "fr": "French", "de": "German", "ru": "Russian",
    "zh": "Chinese", "ja": "Japanese", "th": "Thai", "sw": "Swahili", "bn": "Bengali",
}


@dataclass
class LoadResult:
    """Loaded items (all requested languages) and one line per skipped row."""

    items: list[BenchmarkItem] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class _Bad(Exception):
    def __init__(self, name: str, problem: str):
        super().__init__(problem)
        self.error = RowError(name, problem)


# ---------------------------------------------------------------- field parsers


def parse_number_gold(value: Any) -> str:
    """Gold number as a canonical string: commas stripped, ``8.0`` -> ``8``.

    >>> parse_number_gold(" 114,200 ")
    '114200'
    >>> parse_number_gold("2.5")
    '2.5'
    """
    text = str(value).strip().replace(",", "")
    number = float(text)  # ValueError for non-numbers
    if number.is_integer() and "e" not in text.lower():
        return str(int(number))
    return text


def _text(record: Record, name: str) -> str:
    value = record.get(name)
    if value is None:
        raise _Bad(name, "missing")
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        raise _Bad(name, f"expected text, got {type(value).__name__}")
    text = str(value).strip()
    if not text:
        raise _Bad(name, "empty")
    return text


def _number(record: Record, name: str) -> str:
    text = _text(record, name)
    try:
        return parse_number_gold(text)
    except ValueError:
        raise _Bad(name, f"not a number: {text!r}") from None


def _options(record: Record) -> tuple[str, ...]:
    raw = [record.get(f"option_{i}") for i in range(len(OPTION_LETTERS))]
    present = [v is not None and str(v).strip() not in ("", "N/A") for v in raw]
    count = max((i + 1 for i, ok in enumerate(present) if ok), default=0)
    if count < 2:
        raise _Bad("option_0..option_9", f"need at least 2 options, got {count}")
    if not all(present[:count]):
        raise _Bad(f"option_{present.index(False)}", "missing before the last option")
    return tuple(str(v).strip() for v in raw[:count])


def _letter(record: Record, count: int) -> str:
    answer = record.get("answer")
    if answer is None or not str(answer).strip():
        index = record.get("answer_index")
        if not isinstance(index, int) or isinstance(index, bool):
            raise _Bad("answer", "missing (and no answer_index)")
        answer = OPTION_LETTERS[index] if 0 <= index < len(OPTION_LETTERS) else "?"
    letter = str(answer).strip().upper()
    if letter not in OPTION_LETTERS[:count]:
        raise _Bad("answer", f"{answer!r} is not one of {OPTION_LETTERS[:count]}")
    return letter


# ---------------------------------------------------------------- row parsers: record -> item fields

RowParser = Callable[[Record, int], "dict[str, Any] | None"]


def _mgsm_row(record: Record, index: int) -> dict[str, Any]:
    return {"key": index, "question": _text(record, "question"), "gold": _number(record, "answer")}


def _msvamp_row(record: Record, index: int) -> dict[str, Any]:
    return {"key": index, "question": _text(record, "m_query"), "gold": _number(record, "response")}


def _mmath_row(record: Record, index: int) -> dict[str, Any]:
    gid = record.get("gid", index)
    return {
        "key": gid if isinstance(gid, int) else index,
        "question": _text(record, "question"),
        "gold": _text(record, "answer"),
        "source": _text(record, "data_source"),
    }


def _mmlu_prox_row(record: Record, index: int) -> dict[str, Any] | None:
    if str(record.get("category", "")).strip().lower() != "math":
        return None
    options = _options(record)
    key = record.get("question_id", index)
    return {
        "key": key if isinstance(key, (int, str)) else index,
        "question": _text(record, "question"),
        "gold": _letter(record, len(options)),
        "options": options,
    }


# ---------------------------------------------------------------- local layouts: lang -> files


def _mgsm_files(data_dir: Path) -> dict[str, list[Path]]:
    return {p.stem.removeprefix("mgsm_"): [p] for p in sorted(data_dir.glob("mgsm_*.tsv"))}


def _msvamp_files(data_dir: Path) -> dict[str, list[Path]]:
    return {code: [data_dir / f"test_{name}.json"] for code, name in MSVAMP_FILES.items()
            if (data_dir / f"test_{name}.json").is_file()}


def _mmath_files(data_dir: Path) -> dict[str, list[Path]]:
    return {p.stem: [p] for p in sorted(data_dir.glob("*.json")) if len(p.stem) <= 3}


def _mmlu_prox_files(data_dir: Path) -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {}
    for path in sorted(data_dir.iterdir()) if data_dir.is_dir() else []:
        if path.is_file() and path.suffix in (".parquet", ".jsonl"):
            found.setdefault(path.stem, []).append(path)
        elif path.is_dir():
            files = sorted(p for p in path.iterdir() if p.suffix in (".parquet", ".jsonl"))
            tests = [p for p in files if p.name.startswith("test")]
            if tests or files:
                found.setdefault(path.name, []).extend(tests or files)
    return found


def _read_file(path: Path, tsv: bool) -> Iterator[tuple[str, Record | RowError]]:
    return read_tsv(path, ("question", "answer")) if tsv else read_records(path)


# ---------------------------------------------------------------- the generic loader


@dataclass(frozen=True)
class _Spec:
    name: str
    parse: RowParser
    files: Callable[[Path], dict[str, list[Path]]]
    tsv: bool = False


def _check_available(spec: _Spec, wanted: list[str], available: list[str], where: str) -> None:
    unknown = [lang for lang in wanted if lang not in available]
    if unknown:
        raise ValueError(
            f"{spec.name}: unknown language(s) {', '.join(unknown)} in {where}; "
            f"available: {', '.join(available) or 'none'}"
        )


def _load(spec: _Spec, data_dir: str | None, languages: list[str], limit: int | None,
          selection: Selection, sample_seed: int, hub_languages: list[str], offset: int = 0) -> LoadResult:
    if data_dir is not None:
        if not Path(data_dir).is_dir():
            raise ValueError(f"{spec.name}: data_dir {data_dir} is not a directory")
        files = spec.files(Path(data_dir))
        local = [lang for lang in languages or sorted(files) if lang not in hub_languages]
        _check_available(spec, local, sorted(files), str(data_dir))
        from_hub = [lang for lang in languages if lang in hub_languages]
    else:
        files, local = {}, []
        from_hub = list(languages) or sorted(loaders_hub.hub_languages(spec.name))
    if from_hub:
        _check_available(spec, from_hub, sorted(loaders_hub.hub_languages(spec.name)), "the Hugging Face hub")
    result = LoadResult()
    for lang in languages or [*local, *from_hub]:
        rows = (r for path in files[lang] for r in _read_file(path, spec.tsv)) if lang in local \
            else loaders_hub.read_hub(spec.name, lang)
        items = _parse_rows(spec, lang, rows, result.errors)
        result.items.extend(select(items, limit=limit, selection=selection, sample_seed=sample_seed, offset=offset))
    return result


def _parse_rows(spec: _Spec, lang: str, rows: Iterable[tuple[str, Record | RowError]],
                errors: list[str]) -> list[BenchmarkItem]:
    items: list[BenchmarkItem] = []
    for index, (location, record) in enumerate(rows):
        if isinstance(record, RowError):
            errors.append(record.render(location))
            continue
        try:
            fields = spec.parse(record, index)
        except _Bad as bad:
            errors.append(bad.error.render(location))
            continue
        if fields is None:
            continue
        key = fields.pop("key")
        items.append(BenchmarkItem(id=f"{spec.name}-{key}", benchmark=spec.name, lang=lang, **fields))
    return items


def select(items: list[BenchmarkItem], *, limit: int | None, selection: Selection,
           sample_seed: int, offset: int = 0) -> list[BenchmarkItem]:
    """Keep at most ``limit`` items: the first ones, or a seeded sample in file order, after the first
    ``offset`` items (a held-out split: a training set took that prefix).

    The sample ranks items by ``sha256(seed:id)``, so every language with the
    same ids picks the same problems, and dropping one bad row does not
    reshuffle the rest.

    >>> items = [BenchmarkItem(f"m-{i}", "m", "en", "q", "1") for i in range(5)]
    >>> [i.id for i in select(items, limit=2, selection="first", sample_seed=0)]
    ['m-0', 'm-1']
    >>> len(select(items, limit=2, selection="sample", sample_seed=3))
    2
    >>> [i.id for i in select(items, limit=2, selection="first", sample_seed=0, offset=2)]
    ['m-2', 'm-3']
    """
    items = list(items[offset:])
    if limit is None or limit >= len(items):
        return list(items)
    if selection == "first":
        return list(items[:limit])
    if selection != "sample":
        raise ValueError(f"selection must be 'first' or 'sample', got {selection!r}")

    def rank(item: BenchmarkItem) -> str:
        return hashlib.sha256(f"{sample_seed}:{item.id}".encode()).hexdigest()

    chosen = {item.id for item in sorted(items, key=rank)[:limit]}
    return [item for item in items if item.id in chosen]


def _loader(spec: _Spec) -> Callable[..., LoadResult]:
    def load(*, data_dir: str | None = None, languages: list[str] | None = None, limit: int | None = None,
             selection: Selection = "first", sample_seed: int = 0,
             hub_languages: list[str] | None = None, offset: int = 0) -> LoadResult:
        return _load(spec, data_dir, list(languages or []), limit, selection, sample_seed, list(hub_languages or []),
                     offset)

    load.__name__ = f"load_{spec.name}"
    load.__doc__ = f"Load {spec.name}; see the module docstring for its format."
    load.languages = lambda data_dir: _available(spec, data_dir)
    return load


def _available(spec: _Spec, data_dir: str | None) -> list[str]:
    if data_dir is None:
        return sorted(loaders_hub.hub_languages(spec.name))
    return sorted(spec.files(Path(data_dir))) if Path(data_dir).is_dir() else []


load_mgsm = _loader(_Spec("mgsm", _mgsm_row, _mgsm_files, tsv=True))
load_mgsm_rev2 = _loader(_Spec("mgsm_rev2", _mgsm_row, _mgsm_files, tsv=True))
load_msvamp = _loader(_Spec("msvamp", _msvamp_row, _msvamp_files))
load_mmath = _loader(_Spec("mmath", _mmath_row, _mmath_files))
load_mmlu_prox_math = _loader(_Spec("mmlu_prox_math", _mmlu_prox_row, _mmlu_prox_files))


def _qa_loader(name: str) -> Callable[..., LoadResult]:
    """A loader over ``components.data.benchmarks_qa.read_qa`` (open-domain QA: MKQA, XOR-TyDi, offline set)."""

    def load(*, data_dir: str | None = None, languages: list[str] | None = None, limit: int | None = None,
             selection: Selection = "first", sample_seed: int = 0,
             hub_languages: list[str] | None = None, offset: int = 0) -> LoadResult:
        wanted, from_hub = list(languages or []), list(hub_languages or [])
        local = [lang for lang in wanted if lang not in from_hub] if data_dir else wanted
        per_lang, errors = benchmarks_qa.read_qa(name, data_dir, local) if local or not from_hub else ({}, [])
        if data_dir and from_hub:  # these languages come from the hub copy even though a local directory is given
            hub_items, hub_errors = benchmarks_qa.read_qa(name, None, [lang for lang in wanted if lang in from_hub])
            per_lang, errors = per_lang | hub_items, errors + hub_errors
        return LoadResult([item for items in per_lang.values()
                           for item in select(items, limit=limit, selection=selection, sample_seed=sample_seed,
                                              offset=offset)],
                          errors)

    load.__name__ = f"load_{name}"
    return load


load_mkqa, load_xor_tydi, load_offline_qa = _qa_loader("mkqa"), _qa_loader("xor_tydi"), _qa_loader("offline_qa")

BENCHMARKS: dict[str, Callable[..., LoadResult]] = {
    "mgsm": load_mgsm,
    "mgsm_rev2": load_mgsm_rev2,
    "msvamp": load_msvamp,
    "mmath": load_mmath,
    "mmlu_prox_math": load_mmlu_prox_math,
    "mkqa": load_mkqa,  # open-domain QA (components.data.benchmarks_qa)
    "xor_tydi": load_xor_tydi,
    "offline_qa": load_offline_qa,
}


def available_languages(name: str, data_dir: str | None) -> list[str]:
    """Languages benchmark ``name`` has in ``data_dir`` (its file layout), or on the hub when ``None``.

    >>> available_languages("mgsm", "/nonexistent")
    []
    """
    return BENCHMARKS[name].languages(data_dir)


def load_configured_benchmark(settings: BenchmarkSettings) -> LoadResult:
    """``load_benchmark`` as a profile's benchmark section says (name, data, languages, limit, selection, offset)."""
    return load_benchmark(settings.name, data_dir=settings.data_dir, languages=settings.languages, limit=settings.limit,
                          selection=settings.selection, sample_seed=settings.sample_seed,
                          hub_languages=settings.hub_languages, offset=settings.offset)


def load_benchmark(name: str, *, data_dir: str | None, languages: list[str], limit: int | None,
                   selection: Selection = "first", sample_seed: int = 0,
                   hub_languages: list[str] | None = None, offset: int = 0) -> LoadResult:
    """Load benchmark ``name`` (a ``BENCHMARKS`` key); ValueError names the known ones.

    ``hub_languages``: languages read from the hub copy although ``data_dir`` is given
    (the offline copy lacks them); ``offset``: items skipped per language before the selection.
    """
    if name not in BENCHMARKS:
        raise ValueError(f"unknown benchmark {name!r} (known: {', '.join(sorted(BENCHMARKS))})")
    return BENCHMARKS[name](data_dir=data_dir, languages=languages, limit=limit,
                            selection=selection, sample_seed=sample_seed, hub_languages=hub_languages, offset=offset)
