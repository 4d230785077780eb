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

Files are read as bytes and decoded line by line (``read_lines``): a byte that is not
UTF-8 costs its row only, reported as ``FILE:LINE: field F: not UTF-8 text (byte 0xff
at column C)`` with the column or key that holds it, and every other row loads (Python's
``surrogateescape`` error handler keeps the bad byte as a marker character, so the row
can still be split into its fields to name the one at fault). A UTF-8 byte-order mark
before the first line is no part of it.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "x.tsv"
>>> _ = path.write_text('a "q"\\t1\\nbad line\\n', encoding="utf-8")
>>> [(loc.split(":")[-1], rec) for loc, rec in read_tsv(path, ("question", "answer"))]  # doctest: +ELLIPSIS
[('1', {'question': 'a "q"', 'answer': '1'}), ('2', RowError(...))]
>>> _ = path.write_bytes(b"q\\xff\\t1\\nq2\\t2\\n")
>>> for location, record in read_tsv(path, ("question", "answer")):
...     print(location.split(":")[-1], record)
1 RowError(field='question', problem='not UTF-8 text (byte 0xff at column 2)')
2 {'question': 'q2', 'answer': '2'}
"""

from __future__ import annotations

import codecs
import json
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Iterator


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


def read_lines(path: Path, opener: Callable[..., IO[bytes]] | None = None) -> Iterator[tuple[int, str, str | None]]:
    """``(line number, text, problem)`` for each line of ``path`` read as bytes (line endings kept).

    ``text`` is decoded with ``surrogateescape``; ``problem`` is ``None`` or says which byte is not UTF-8
    (``undecodable_problem``). ``opener``: how to open the file in binary mode (``gzip.open`` for ``.gz``).
    """
    with (opener or open)(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if number == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8):]
            text = raw.decode("utf-8", errors="surrogateescape")
            yield number, text, undecodable_problem(text)


def undecodable_problem(text: str) -> str | None:
    """Which byte of ``text`` (decoded with ``surrogateescape``) was not UTF-8, or ``None``.

    >>> undecodable_problem(b"ab\\xffc".decode("utf-8", "surrogateescape")), undecodable_problem("abc")
    ('not UTF-8 text (byte 0xff at column 3)', None)
    """
    for column, char in enumerate(text, start=1):
        if "\udc80" <= char <= "\udcff":
            return f"not UTF-8 text (byte 0x{ord(char) - 0xDC00:02x} at column {column})"
    return None


def undecodable_field(record: Any) -> str | None:
    """The first key of ``record`` whose name or value (nested values too) holds an undecodable byte."""
    for key, value in record.items():
        if any(undecodable_problem(text) for text in (str(key), *_strings(value))):
            return str(key)
    return None


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def read_tsv(path: Path, columns: tuple[str, ...]) -> Iterator[tuple[str, Record | RowError]]:
    """Split each line on tabs (no quote handling); a wrong column count or a byte that is not UTF-8 is a
    ``RowError`` (naming the column that holds the byte)."""
    for number, line, problem in read_lines(path):
        location = f"{path}:{number}"
        fields = line.rstrip("\r\n").split("\t")
        if len(fields) != len(columns):
            found = f"expected {len(columns)} tab-separated columns, got {len(fields)}"
            yield location, RowError("columns", found + (f"; {problem}" if problem else ""))
            continue
        record = dict(zip(columns, fields))
        if problem:
            yield location, RowError(undecodable_field(record) or "columns", undecodable_problem(line) or problem)
            continue
        yield location, record


def read_jsonl(path: Path) -> Iterator[tuple[str, Record | RowError]]:
    """One JSON object per line; blank lines are skipped, bad JSON or a byte that is not UTF-8 is a ``RowError``."""
    for number, line, problem in read_lines(path):
        if not line.strip():
            continue
        yield f"{path}:{number}", decode_object(line, problem)


def decode_object(text: str, undecodable: str | None = None) -> Record | RowError:
    """The JSON object on one line, or the ``RowError`` saying why not (``undecodable``: the line's byte problem,
    reported on the key that holds the byte when the line still parses)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        return RowError("json", undecodable or f"not valid JSON ({error.msg} at column {error.colno})")
    if not isinstance(value, dict):
        return RowError("json", undecodable or f"expected an object, got {type(value).__name__}")
    if undecodable:
        return RowError(undecodable_field(value) or "json", undecodable)
    return value


def read_json_array(path: Path) -> Iterator[tuple[str, Record | RowError]]:
    """Elements of a top-level JSON array, each located at the line where it starts.

    A syntax error stops the file there (there is no way to resynchronize
    inside an array): it is reported once with its line, and the elements
    already read are kept.
    """
    text = path.read_bytes().removeprefix(codecs.BOM_UTF8).decode("utf-8", errors="surrogateescape")
    undecodable = undecodable_problem(text) is not None  # then each element is checked for the bytes it holds
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
        if not isinstance(value, dict):
            yield f"{path}:{line}", RowError("json", "element is not an object")
        elif undecodable and (field := undecodable_field(value)) is not None:
            yield f"{path}:{line}", RowError(field, "not UTF-8 text")
        else:
            yield f"{path}:{line}", value
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
    with path.open("rb") as handle:
        head = handle.read(64).removeprefix(codecs.BOM_UTF8).lstrip()
    return read_json_array(path) if head.startswith(b"[") else read_jsonl(path)
