"""The maths benchmarks' specs: each one's row parser, offline layout and hub copy, loaded one way.

- ``mgsm`` (Shi et al., 2022) and ``mgsm_rev2`` (Peter et al., 2025): ``mgsm_<lang>.tsv``,
  ``question<TAB>answer``, no header, no quoting; four answers carry thousands
  commas (``2,125``), stripped here. Hub: ``juletxara/mgsm``, config = language,
  split ``test``, gold ``answer_number`` (``answer`` holds the CoT only in the
  train split); MGSM-Rev2: ``lightonai/mgsm-rev2`` (the 11 MGSM languages, the copy
  lighteval's ``mgsm-rev2`` task reads). MGSM-Rev2 has no Korean; AdaMame reports
  Korean MGSM-Rev2 numbers from an unpublished translation, so ``ko`` reads
  ``freewheelin/mgsm_ko`` (a Korean translation of the original MGSM, same
  fields): a stand-in, not the paper's test set.
- ``msvamp`` (Chen et al., 2024, MathOctopus): ``test_<Language>.json``, JSON Lines;
  ``m_query`` is the question, ``response`` a float string (``"8.0"`` -> gold ``"8"``).
  Hub: ``Mathoctopus/MSVAMP``, config = language, split ``test``.
- ``mmath`` (RUCAIBox): ``<lang>.json`` arrays; ``data_source`` (MATH500, AIME2024,
  AIME2025, CNMO) is kept as ``source`` since MMATH accuracy is the macro average
  over sources (its spec's ``macro_field``); ``gid`` is the cross-language id.
  Hub: ``RUC-AIBOX/MMATH``, the per-language files ``mmath/<lang>.json``.
- ``mmlu_prox_math`` (li-lab/MMLU-ProX): ``question``, ``option_0..option_9``,
  ``answer`` (letter), ``answer_index``, ``category``, ``src``; only ``category == "math"``.
  Local copies: ``<lang>.parquet|.jsonl`` or ``<lang>/*.parquet|*.jsonl``. Hub:
  ``li-lab/MMLU-ProX``, config = language, split ``test``.

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

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from components.data.benchmark_spec import BenchmarkSpec, LoadResult, Selection, select
from components.data.loaders_hub import HubSource, read_hub
from components.data.loaders_local import Record, RowError, read_records, read_tsv
from components.records import OPTION_LETTERS, BenchmarkItem

MSVAMP_FILES = {
    "en": "English", "es": "Spanish", "fr": "French", "de": "German", "ru": "Russian",
    "zh": "Chinese", "ja": "Japanese", "th": "Thai", "sw": "Swahili", "bn": "Bengali",
}
MGSM_LANGUAGES = ("en", "es", "fr", "de", "ru", "zh", "ja", "th", "sw", "bn", "te")


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


# ---------------------------------------------------------------- the loader of every maths benchmark

Layout = Callable[[Path], "dict[str, list[Path]]"]


def _check_available(name: str, wanted: list[str], available: list[str], where: str) -> None:
    unknown = [lang for lang in wanted if lang not in available]
    if unknown:
        raise ValueError(
            f"{name}: unknown language(s) {', '.join(unknown)} in {where}; "
            f"available: {', '.join(available) or 'none'}"
        )


def _load(name: str, parse: RowParser, files_of: Layout, tsv: bool, hub: HubSource | None, data_dir: str | None,
          languages: list[str], limit: int | None, selection: Selection, sample_seed: int, hub_languages: list[str],
          offset: int = 0) -> LoadResult:
    hub_has = sorted(hub.languages) if hub is not None else []
    if data_dir is not None:
        if not Path(data_dir).is_dir():
            raise ValueError(f"{name}: data_dir {data_dir} is not a directory")
        files = files_of(Path(data_dir))
        local = [lang for lang in languages or sorted(files) if lang not in hub_languages]
        _check_available(name, local, sorted(files), str(data_dir))
        from_hub = [lang for lang in languages if lang in hub_languages]
    else:
        files, local = {}, []
        from_hub = list(languages) or hub_has
    if from_hub and hub is None:
        raise ValueError(f"{name}: no Hugging Face hub copy is known; set data_dir to a local copy")
    if from_hub:
        _check_available(name, from_hub, hub_has, "the Hugging Face hub")
    result = LoadResult()
    for lang in languages or [*local, *from_hub]:
        rows = (r for path in files[lang] for r in _read_file(path, tsv)) if lang in local else read_hub(hub, lang)
        items = _parse_rows(name, parse, lang, rows, result.errors)
        result.items.extend(select(items, limit=limit, selection=selection, sample_seed=sample_seed, offset=offset))
    return result


def _read_file(path: Path, tsv: bool) -> Iterator[tuple[str, Record | RowError]]:
    return read_tsv(path, ("question", "answer")) if tsv else read_records(path)


def _parse_rows(name: str, parse: RowParser, lang: str, rows: Iterable[tuple[str, Record | RowError]],
                errors: list[str]) -> list[BenchmarkItem]:
    items: list[BenchmarkItem] = []
    for index, (location, record) in enumerate(rows):
        if isinstance(record, RowError):
            errors.append(record.render(location))
            continue
        try:
            fields = parse(record, index)
        except _Bad as bad:
            errors.append(bad.error.render(location))
            continue
        if fields is None:
            continue
        key = fields.pop("key")
        items.append(BenchmarkItem(id=f"{name}-{key}", benchmark=name, lang=lang, **fields))
    return items


def maths_benchmark(name: str, parse: RowParser, files: Layout, *, tsv: bool = False, hub: HubSource | None = None,
                    macro_field: str | None = None) -> BenchmarkSpec:
    """The spec of a maths benchmark read by ``parse`` from the files ``files`` finds (or from ``hub``)."""

    def load(*, data_dir: str | None = None, languages: list[str] | None = None, limit: int | None = None,
             selection: Selection = "first", sample_seed: int = 0,
             hub_languages: list[str] | None = None, offset: int = 0) -> LoadResult:
        return _load(name, parse, files, tsv, hub, data_dir, list(languages or []), limit, selection, sample_seed,
                     list(hub_languages or []), offset)

    load.__name__ = f"load_{name}"
    load.__doc__ = f"Load {name}; see components.data.benchmarks_math for its format."
    return BenchmarkSpec(name, load, lambda data_dir: sorted(files(data_dir)), hub=hub, kind="math",
                         macro_field=macro_field)


MGSM = maths_benchmark("mgsm", _mgsm_row, _mgsm_files, tsv=True,
                       hub=HubSource("juletxara/mgsm", MGSM_LANGUAGES, rename=(("answer_number", "answer"),)))
MGSM_REV2 = maths_benchmark("mgsm_rev2", _mgsm_row, _mgsm_files, tsv=True,
                            hub=HubSource("lightonai/mgsm-rev2", (*MGSM_LANGUAGES, "ko"),
                                          rename=(("answer_number", "answer"),),
                                          elsewhere=(("ko", "freewheelin/mgsm_ko"),)))
MSVAMP = maths_benchmark("msvamp", _msvamp_row, _msvamp_files, hub=HubSource("Mathoctopus/MSVAMP", tuple(MSVAMP_FILES)))
MMATH = maths_benchmark("mmath", _mmath_row, _mmath_files, macro_field="source",
                        hub=HubSource("RUC-AIBOX/MMATH", ("ar", "en", "es", "fr", "ja", "ko", "pt", "th", "vi", "zh"),
                                      data_files="mmath/{lang}.json"))
MMLU_PROX_MATH = maths_benchmark("mmlu_prox_math", _mmlu_prox_row, _mmlu_prox_files, hub=HubSource(
    "li-lab/MMLU-ProX",
    ("af", "ar", "bn", "cs", "de", "en", "es", "fr", "hi", "hu", "id", "it", "ja", "ko", "mr",
     "ne", "pt", "ru", "sr", "sw", "te", "th", "uk", "ur", "vi", "wo", "yo", "zh", "zu")))
