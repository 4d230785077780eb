"""Source problems for data construction (AdaMame §3.1 "Queries").

Any table of English math problems with gold answers: a Hugging Face dataset by
name (``datasets.load_dataset(hub, hub_config, split=...)``, e.g. DAPO-Math-17K
or GSM8K; needs the network) or a local JSONL/JSON/parquet/TSV/CSV file, with
the question/answer/id columns mapped in the profile. Offline, the English
MSVAMP file serves (its ``m_query``/``response`` columns), and then MSVAMP must
not also be an evaluation benchmark (the profile refuses that).

Bad rows fail soft and loud: a row without a question, without a gold, or with
a gold that the verifier cannot read back as an answer to itself is reported
with its ``FILE:LINE`` and dropped before any translation is paid for.

>>> extract_gold("Natalia sold 48 ... #### 72", r"####\\s*(.+)$")
'72'
>>> extract_gold("  8.0 ", None)
'8.0'
>>> extract_gold("", None) is None
True
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from components.data.loaders_local import Record, RowError, read_lines, read_records, undecodable_field
from components.language import LANGUAGE_NAMES

if TYPE_CHECKING:
    from components.settings import DataSourceSettings


@dataclass
class SourceLoad:
    """Usable rows (``id, row, question, gold, source``) and the reported bad rows."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    problems: list[dict[str, Any]] = field(default_factory=list)


def extract_gold(raw: Any, answer_regex: str | None) -> str | None:
    """The gold answer text, or ``None`` when empty or when ``answer_regex`` does not match."""
    if raw is None:
        return None
    text = str(raw).strip()
    if answer_regex:
        match = re.search(answer_regex, text, flags=re.MULTILINE)
        text = match.group(1).strip() if match else ""
    return text or None


def gold_is_parseable(gold: str) -> bool:
    """A gold is usable when the ``trusted`` verifier accepts it as the answer to itself.

    >>> gold_is_parseable("8.0"), gold_is_parseable("not a number")
    (True, False)
    """
    from components.verification import verify

    return verify("trusted", gold, gold, "en", extract=False).correct


def _read_delimited(path: Path, delimiter: str) -> Iterator[tuple[str, Record | RowError]]:
    """Rows under the header; lines are decoded one by one (``read_lines``), so a byte that is not UTF-8 costs
    its row, reported on the column that holds it."""
    reader = csv.DictReader((text for _, text, _ in read_lines(path)), delimiter=delimiter)
    for record in reader:
        location = f"{path}:{reader.line_num}"
        if None in record:
            yield location, RowError("columns", "more fields than header columns")
        elif (field := undecodable_field(record)) is not None:
            yield location, RowError(field, "not UTF-8 text")
        else:
            yield location, dict(record)


def read_local(path: Path, fmt: str) -> Iterator[tuple[str, Record | RowError]]:
    """Records of a local table; TSV/CSV need a header row naming the columns."""
    if fmt == "auto":
        fmt = {".tsv": "tsv", ".csv": "csv"}.get(path.suffix, "records")
    if fmt in ("tsv", "csv"):
        return _read_delimited(path, "\t" if fmt == "tsv" else ",")
    return read_records(path)


def read_hub(name: str, config: str | None, split: str) -> Iterator[tuple[str, Record | RowError]]:
    """Rows of a hub dataset (network needed), located as ``hub:NAME[config]/split:ROW``."""
    from datasets import load_dataset

    dataset = load_dataset(name, config, split=split)
    for number, record in enumerate(dataset, start=1):
        yield f"hub:{name}[{config or ''}]/{split}:{number}", dict(record)


def _records(settings: "DataSourceSettings") -> Iterator[tuple[str, Record | RowError]]:
    if settings.hub is not None:
        return read_hub(settings.hub, settings.hub_config, settings.split)
    return read_local(Path(settings.path), settings.format)


def _problem(location: str, row: int, reason: str, detail: str) -> dict[str, Any]:
    return {"location": location, "row": row, "reason": reason, "detail": detail}


def load_source(
    settings: "DataSourceSettings",
    gold_ok: Callable[[str], bool] = gold_is_parseable,
) -> SourceLoad:
    """Read, map and check the source; ``limit`` counts usable rows."""
    out = SourceLoad()
    for row, (location, record) in enumerate(_records(settings)):
        if settings.limit is not None and len(out.rows) >= settings.limit:
            break
        if isinstance(record, RowError):
            out.problems.append(_problem(location, row, "unreadable", f"{record.field}: {record.problem}"))
            continue
        question = str(record.get(settings.question_column) or "").strip()
        raw_gold = record.get(settings.answer_column)
        gold = extract_gold(raw_gold, settings.answer_regex)
        if not question:
            out.problems.append(_problem(location, row, "missing_question", f"no {settings.question_column!r}"))
        elif gold is None:
            out.problems.append(_problem(location, row, "missing_gold", f"{settings.answer_column!r}={raw_gold!r}"))
        elif not gold_ok(gold):
            out.problems.append(_problem(location, row, "unparseable_gold", f"gold {gold!r}"))
        else:
            ident = record.get(settings.id_column) if settings.id_column else None
            ident = str(ident) if ident not in (None, "") else f"{settings.name}-{row:05d}"
            out.rows.append({"id": ident, "row": row, "question": question, "gold": gold, "source": settings.name})
    return out


def load_references(
    settings: "DataSourceSettings", languages: Iterable[str]
) -> dict[str, dict[int, str]]:
    """Reference translations per language, keyed by source row (row *i* = the same problem).

    Languages whose file does not exist are left out (chrF is then not reported for them).
    """
    if settings.reference_path is None:
        return {}
    out: dict[str, dict[int, str]] = {}
    for lang in languages:
        name = LANGUAGE_NAMES.get(lang, lang)
        path = Path(settings.reference_path.format(lang=lang, language=name))
        if not path.exists():
            continue
        table: dict[int, str] = {}
        for row, (_, record) in enumerate(read_local(path, "auto")):
            if isinstance(record, dict) and record.get(settings.reference_column):
                table[row] = str(record[settings.reference_column])
        out[lang] = table
    return out
