"""The order pytest-xdist hands test files to its workers: the longest expected file first.

``--dist loadfile`` keeps a file on one worker (its module-scoped servers and cached
stages are built once), but xdist's own queue sorts files by their *number* of tests,
largest first, and gives a worker its next file as soon as it has two tests or fewer
left. On this suite that schedules the many-test unit files first and the end-to-end
files (a few tests of one to six minutes each) last: a run could end on a tail of one or
two workers still in long files while the others had run out of work. Measured from a
fresh clone, the order did not shorten the total (2058 s against 2060 s): on two cores the
suite is CPU-bound, so what the order removes is the risk of that tail, not work.

This scheduler is xdist's ``LoadFileScheduling`` with its queue in the collection's
order, which ``order_by_expected_seconds`` sorts by each file's expected seconds, longest
first (the classic longest-processing-time rule for identical machines). When a worker
gets its next file stays xdist's rule (at two pending tests or fewer): a worker runs a
test only once it knows the one after it (pytest's ``nextitem``, for teardown), so a rule
that waited for a file's last test to finish before sending the next file would leave the
worker waiting for work and the controller waiting for that test.

The expected seconds come from ``FILE_SECONDS`` (``tests/file_seconds.json``, a
measured run of the whole suite; refresh it with ``python -m tests.helpers.file_schedule
LOG`` on the output of ``pytest --durations=0``); a file it does not list is expected to
take ``DEFAULT_SECONDS`` for its kind. The numbers only order the queue: a stale entry
costs balance, never a test.
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path

FILE_SECONDS = Path(__file__).resolve().parents[1] / "file_seconds.json"
DEFAULT_SECONDS = {"tests/e2e": 120.0, "tests/integration": 30.0}  # else 2 s: unit tests and doctests
DURATION_LINE = re.compile(r"^(?P<seconds>\d+(?:\.\d+)?)s\s+(?:setup|call|teardown)\s+(?P<nodeid>\S+)")


def expected_seconds(path: str, table: dict[str, float]) -> float:
    """A file's expected seconds: the table's, or its kind's default."""
    if path in table:
        return table[path]
    return next((seconds for prefix, seconds in DEFAULT_SECONDS.items() if path.startswith(prefix)), 2.0)


def read_table(path: Path = FILE_SECONDS) -> dict[str, float]:
    """The committed file -> seconds table (empty when the file is absent)."""
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def order_by_expected_seconds(items: list, table: dict[str, float]) -> None:
    """Sort collected items in place: files by expected seconds, longest first; a file's items keep their order."""
    position = {}
    for index, item in enumerate(items):
        position.setdefault(item.nodeid.split("::", 1)[0], index)
    items.sort(key=lambda item: (-expected_seconds(item.nodeid.split("::", 1)[0], table),
                                 position[item.nodeid.split("::", 1)[0]]))


def seconds_per_file(lines: list[str]) -> dict[str, float]:
    """File -> summed setup, call and teardown seconds, from ``pytest --durations=0`` output lines."""
    totals: dict[str, float] = defaultdict(float)
    for line in lines:
        found = DURATION_LINE.match(line.strip())
        if found:
            totals[found["nodeid"].split("::", 1)[0]] += float(found["seconds"])
    return {path: round(seconds, 1) for path, seconds in sorted(totals.items(), key=lambda kv: -kv[1])}


def make_scheduler(config, log):
    """xdist's ``loadfile`` scheduler with its queue in the collection's order (see the module docstring)."""
    from xdist.scheduler import LoadFileScheduling

    config.option.loadscopereorder = False  # keep the collection's (expected-seconds) order
    return LoadFileScheduling(config, log)


if __name__ == "__main__":
    table = seconds_per_file(Path(sys.argv[1]).read_text(encoding="utf-8").splitlines())
    FILE_SECONDS.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    print(f"{len(table)} files, {sum(table.values()):.0f} s in all -> {FILE_SECONDS}")
