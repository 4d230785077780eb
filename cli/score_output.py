"""``polyreason score``'s JSON with its rows streamed: the same text as ``cli.terminal.as_json``, never held whole.

Scoring hands each chunk of scored rows to a :class:`RowSpool` as it is judged (one JSON line per row
in a temporary file), so neither the rows nor the JSON text of a large file is held in memory. The
result (``--out FILE``, ``--json``) is then written in pieces: ``{"rows": [...]`` from the spool, one
row at a time, then the result's other keys, laid out exactly as ``json.dumps(..., indent=2)`` lays
out the whole object (a nested row is its own ``indent=2`` text shifted by two levels; JSON strings
hold no raw line break, so only the layout's line breaks are shifted), each piece with URL
credentials redacted as ``as_json`` does.

>>> spool = RowSpool()
>>> spool.write([{"id": "1", "lang": "fr"}, {"id": "2", "lang": "en"}])
>>> whole = {"rows": [{"id": "1", "lang": "fr"}, {"id": "2", "lang": "en"}], "aggregate": {"fr": {}}}
>>> "".join(json_pieces({"aggregate": {"fr": {}}}, spool.rows())) == json.dumps(whole, indent=2)
True
>>> "".join(json_pieces({"errors": []}, iter([]))) == json.dumps({"rows": [], "errors": []}, indent=2)
True
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import typer

SHIFT = "    "  # a row's place in the result: inside "rows", inside the object


def _dumps(value: Any, **layout: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str, **layout)


class RowSpool:
    """Scored rows on a temporary file, one JSON line each, in the order they were judged."""

    def __init__(self) -> None:
        self.file = tempfile.TemporaryFile("w+", encoding="utf-8")
        self.count = 0

    def write(self, rows: Iterable[Mapping[str, Any]]) -> None:
        for row in rows:
            self.file.write(_dumps(row) + "\n")
            self.count += 1

    def rows(self) -> Iterator[Any]:
        self.file.seek(0)
        return (json.loads(line) for line in self.file)

    def close(self) -> None:
        self.file.close()


def json_pieces(result: Mapping[str, Any], rows: Iterable[Any]) -> Iterator[str]:
    """The text of ``as_json({"rows": rows, **result})``, piece by piece."""
    from components.settings import redact_credentials

    yield '{\n  "rows": ['
    first = True
    for row in rows:
        text = SHIFT + _dumps(row, indent=2).replace("\n", "\n" + SHIFT)
        yield redact_credentials(("\n" if first else ",\n") + text)
        first = False
    yield "]" if first else "\n  ]"
    rest = _dumps(dict(result), indent=2)
    yield "\n}" if rest == "{}" else redact_credentials("," + rest[1:])


def emit_streamed(result: Mapping[str, Any], spool: RowSpool, out: Path | None, text: str | None) -> None:
    """As ``cli.app._emit``: ``out`` gets the JSON with the spooled rows, stdout ``text`` or else the same JSON."""
    from cli.terminal import close_progress

    close_progress()
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w", encoding="utf-8") as handle:
            handle.writelines(json_pieces(result, spool.rows()))
            handle.write("\n")
    if text is not None:
        typer.echo(text)
        return
    for piece in json_pieces(result, spool.rows()):
        typer.echo(piece, nl=False)
    typer.echo("")
