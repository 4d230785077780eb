"""File readers for the offline benchmark copies: TSV, JSON Lines, JSON arrays, parquet.

Every reader yields ``(location, record_or_error)`` pairs, where ``location``
is ``FILE:LINE`` (``FILE:ROW`` for parquet, 1-based) and a bad record is a
``RowError`` instead of a dict, so one malformed row is reported and skipped
while the rest of the file loads (the lm-eval/HELM habit of failing soft per
instance, loud per file).

- TSV: MGSM's upstream format, ``question<TAB>answer``, no header, **no quoting**
  (``mgsm_es.tsv`` line 214 has literal ``"``), so lines are split on tabs.
- JSON Lines: MSVAMP (despite its ``.json`` names), one object per line.
- JSON arrays: MMATH; elements are decoded one by one so each gets its line.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "x.tsv"
>>> _ = path.write_text('a "q"\\t1\\nbad line\\n', encoding="utf-8")
>>> [(loc.split(":")[-1], rec) for loc, rec in read_tsv(path, ("question", "answer"))]  # doctest: +ELLIPSIS
[('1', {'question': 'a "q"', 'answer': '1'}), ('2', RowError(...))]
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator


@dataclass(frozen=True)
class RowError:
    """Why one record could not be read: the field involved and the problem."""

    field: str
    problem: str

    def render(self, location: str) -> str:
        """``FILE:LINE: field X: problem``.

        >>> RowError("answer", "missing").render("f.tsv:3")
        'f.tsv:3: field answer: missing'
        """
        return f"{location}: field {self.field}: {self.problem}"


Record = dict[str, Any]


def read_tsv(path: Path, columns: tuple[str, ...]) -> Iterator[tuple[str, Record | RowError]]:
    """Split each line on tabs (no quote handling); a wrong column count is a ``RowError``."""
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            location = f"{path}:{number}"
            fields = line.rstrip("\r\n").split("\t")
            if len(fields) != len(columns):
                problem = f"expected {len(columns)} tab-separated columns, got {len(fields)}"
                yield location, RowError("columns", problem)
                continue
            yield location, dict(zip(columns, fields))


def read_jsonl(path: Path) -> Iterator[tuple[str, Record | RowError]]:
    """One JSON object per line; blank lines are skipped, bad JSON is a ``RowError``."""
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            yield f"{path}:{number}", _decode_object(line)


def _decode_object(text: str) -> Record | RowError:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        return RowError("json", f"not valid JSON ({error.msg} at column {error.colno})")
    if not isinstance(value, dict):
        return RowError("json", f"expected an object, got {type(value).__name__}")
    return value


def read_json_array(path: Path) -> Iterator[tuple[str, Record | RowError]]:
    """Elements of a top-level JSON array, each located at the line where it starts.

    A syntax error stops the file there (there is no way to resynchronize
    inside an array): it is reported once with its line, and the elements
    already read are kept.
    """
    text = path.read_text(encoding="utf-8")
    decoder = json.JSONDecoder()
    position = _skip_space(text, 0)
    if position >= len(text) or text[position] != "[":
        yield f"{path}:{text.count(chr(10), 0, position) + 1}", RowError("json", "expected a JSON array")
        return
    position = _skip_space(text, position + 1)
    while position < len(text) and text[position] != "]":
        line = text.count("\n", 0, position) + 1
        try:
            value, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as error:
            yield f"{path}:{error.lineno}", RowError("json", f"not valid JSON ({error.msg}); rest of file skipped")
            return
        yield f"{path}:{line}", value if isinstance(value, dict) else RowError("json", "element is not an object")
        position = _skip_space(text, position)
        if position < len(text) and text[position] == ",":
            position = _skip_space(text, position + 1)


def _skip_space(text: str, position: int) -> int:
    while position < len(text) and text[position] in " \t\r\n":
        position += 1
    return position


def read_parquet(path: Path) -> Iterator[tuple[str, Record | RowError]]:
    """Rows of a parquet file as dicts, located as ``FILE:ROW`` (1-based)."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    for number, row in enumerate(table.to_pylist(), start=1):
        yield f"{path}:{number}", row


def read_records(path: Path) -> Iterator[tuple[str, Record | RowError]]:
    """Pick the reader by suffix: ``.parquet``, ``.jsonl``; ``.json`` sniffs array vs lines."""
    if path.suffix == ".parquet":
        return read_parquet(path)
    if path.suffix == ".jsonl":
        return read_jsonl(path)
    with path.open(encoding="utf-8") as handle:
        head = handle.read(64).lstrip()
    return read_json_array(path) if head.startswith("[") else read_jsonl(path)
