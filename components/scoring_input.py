"""The rows ``polyreason score`` reads: one line at a time, each row checked, counted once, and named when left out.

Scoring reads its input twice rather than holding it: a first pass (``survey``) checks
every row and keeps a few fields of each (its line, identity, language, benchmark),
a second pass (``rows_to_score``) yields the rows that survived, in chunks the scorer
takes (512 rows, or two million characters of completions, whichever comes first).
Completions are never all in memory at once, so memory follows a chunk (or the largest
row, when one row is larger), not the file; the survey's own record is a few keys per row (the
repeat check's identities, each problem's row count: ``Survey.samples``).

What the first pass leaves out, each as an error naming file, line and field:

* a line that is not UTF-8 or not JSON (``iter_jsonl_rows``), and a row that fails the
  scorer's field checks;
* a row that repeats the ``(benchmark, id, lang, sample_index)`` of an earlier one: a
  sample scored twice would weigh twice in its language's mean, so the first is kept
  and the repeat named (rows without ``sample_index`` are samples in file order, as
  before, and are not compared);
* in a file whose rows name their ``benchmark``, a row that names none: it would be
  averaged as a benchmark of its own, with the weight of a whole benchmark.

Written by hand: a JSONL file is read line by line with the standard library, and the
checks are ours.

>>> numbered = [(1, {"id": 1, "lang": "en", "benchmark": "m", "sample_index": 0}, None),
...             (2, {"id": "1", "lang": "en", "benchmark": "m", "sample_index": 0}, None),
...             (3, {"id": 2, "lang": "en"}, None)]
>>> found = survey(lambda: iter(numbered), lambda row, line: [], "f.jsonl")
>>> [error["message"] for error in found.errors]  # doctest: +NORMALIZE_WHITESPACE
["f.jsonl:2: field 'sample_index': repeats line 1 (the same benchmark, id, lang and sample_index): counted once,
  as line 1", "f.jsonl:3: field 'benchmark': missing while the file's other rows name theirs (m): left out rather
  than averaged as a benchmark of its own"]
>>> found.languages, found.benchmarks, sorted(found.excluded), dict(found.samples)
({'en'}, {'m'}, [2, 3], {('m', 'en', '1'): 1})
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Numbered = tuple[int, Any, "dict[str, Any] | None"]  # (line, row, the line's read error)
CHUNK_CHARACTERS = 2_000_000  # completion characters scored together: lingua's batch, the chunk's memo


def row_error(source: str, line: int, field_name: str | None, message: str) -> dict[str, Any]:
    """One problem of one row: ``{"file", "line", "field", "message"}``, the message naming all three."""
    where = f"{source}:{line}" + (f": field '{field_name}'" if field_name else "")
    return {"file": source, "line": line, "field": field_name, "message": f"{where}: {message}"}


def iter_jsonl_rows(path: str | Path) -> Iterator[Numbered]:
    """``(line, row, None)`` for each non-blank line of a JSONL file, or ``(line, None, error)`` for a line that is
    not UTF-8 or not JSON; read one line at a time (a UTF-8 byte-order mark before row 1 is skipped)."""
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
                if text.strip():
                    yield number, json.loads(text), None
            except UnicodeDecodeError as exc:
                yield number, None, row_error(str(path), number, None, f"not UTF-8 ({exc.reason})")
            except json.JSONDecodeError as exc:
                yield number, None, row_error(str(path), number, None, f"not valid JSON ({exc.msg})")


@dataclass
class Survey:
    """What the first pass found: every problem, the lines left out, the languages and benchmarks of the rest, and
    how many rows each problem ``(benchmark, lang, id)`` kept (so its statistics can be taken at its last row)."""

    errors: list[dict[str, Any]] = field(default_factory=list)
    excluded: set[int] = field(default_factory=set)
    languages: set[str] = field(default_factory=set)
    benchmarks: set[str] = field(default_factory=set)
    samples: Counter[tuple[Any, str, str]] = field(default_factory=Counter)


def survey(numbered: Callable[[], Iterable[Numbered]], check: Callable[[Any, int], list[dict[str, Any]]],
           source: str) -> Survey:
    """Pass one over ``numbered()``: ``check(row, line)`` gives a row's field problems (see the module docstring)."""
    found, first_line, unnamed = Survey(), {}, []
    for line, row, error in numbered():
        problems = [error] if error is not None else check(row, line)
        if not problems and row.get("sample_index") is not None:
            identity = (row.get("benchmark"), str(row["id"]), row["lang"], row["sample_index"])
            if identity in first_line:
                problems = [row_error(source, line, "sample_index", f"repeats line {first_line[identity]} (the same "
                                      f"benchmark, id, lang and sample_index): counted once, as line "
                                      f"{first_line[identity]}")]
            first_line.setdefault(identity, line)
        if problems:
            found.errors += problems
            found.excluded.add(line)
            continue
        found.languages.add(row["lang"])
        found.samples[row.get("benchmark"), row["lang"], str(row["id"])] += 1
        if row.get("benchmark") is None:
            unnamed.append(line)
        else:
            found.benchmarks.add(row["benchmark"])
    if unnamed and found.benchmarks:
        named = ", ".join(sorted(found.benchmarks))
        found.errors += [row_error(source, line, "benchmark", f"missing while the file's other rows name theirs "
                                   f"({named}): left out rather than averaged as a benchmark of its own")
                         for line in unnamed]
        found.excluded.update(unnamed)
        for problem in [problem for problem in found.samples if problem[0] is None]:
            del found.samples[problem]
    found.errors.sort(key=lambda error: error["line"])
    return found


def rows_to_score(numbered: Iterable[Numbered], excluded: set[int], size: int,
                  characters: int = CHUNK_CHARACTERS) -> Iterator[list[dict[str, Any]]]:
    """Pass two: the rows the survey kept, ``id`` and ``gold`` as strings, in chunks of ``size`` rows or of
    completions of ``characters`` in all, whichever is reached first (a chunk holds at least one row).

    >>> rows = [(n, {"id": n, "gold": 1, "completion": "x" * 5}, None) for n in range(1, 6)]
    >>> [[row["id"] for row in chunk] for chunk in rows_to_score(rows, {2}, size=3, characters=10)]
    [['1', '3'], ['4', '5']]
    """
    chunk, held = [], 0
    for line, row, error in numbered:
        if error is not None or line in excluded:
            continue
        chunk.append({**row, "id": str(row["id"]), "gold": str(row["gold"])})
        held += len(row["completion"])
        if len(chunk) >= size or held >= characters:
            yield chunk
            chunk, held = [], 0
    if chunk:
        yield chunk
