"""Problems reduced to their statistics: everything the corpus aggregates read, without the rows.

Every corpus value of the metric table is a function of per-problem statistics summed over
problems (``components.metrics.metric``), and everything else a cell reports is per problem too:
its stratum (the benchmark and the macro rule's subset field of its first sample, as the
bootstrap reads it), its number of samples (``n_rows``, pass@k's shortfalls, avg@k's name).
:class:`Problems` holds exactly that per problem, in first-seen order: the first sample's
identity and subset fields (``head``), the sample count, and the statistics of every metric of
one table in one float vector. ``components.metrics.aggregate`` and ``components.metrics.bootstrap``
read only this, so the numbers are the same whether a cell's rows are held (``Problems.of_rows``)
or went by one at a time (:class:`ProblemStream`: a problem's samples are held, reduced to the
fields its statistics read, until its last sample arrives, then replaced by its statistics).

Written by hand: the grouping of samples into problems is the project's own (``problem_of``).

>>> from components.metrics.registry import metrics
>>> table = metrics((1, 2))
>>> rows = [{"lang": "fr", "id": "a", "correct": c} for c in (True, False)] + [{"lang": "en", "id": "b",
...         "correct": True}]
>>> held = Problems.of_rows(rows, table)
>>> stream = ProblemStream(table, {(None, "fr", "a"): 2, (None, "en", "b"): 1})
>>> for row in rows:
...     stream.add(row)
>>> streamed = stream.problems()
>>> [p.samples for p in streamed.items], streamed.n_rows, streamed.short(2), streamed.output_name(table[-1])
([2, 1], 3, 1, 'fallback_share')
>>> all(np.array_equal(a.stats, b.stats, equal_nan=True) for a, b in zip(held.items, streamed.items))
True
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from components.metrics.metric import Metric, Problem, Row, by_problem, problem_of

IDENTITY = ("benchmark", "lang", "id")


@dataclass(frozen=True)
class Summary:
    """One problem: its first sample's identity and subset fields, its samples, its statistics (table order)."""

    head: Row
    samples: int
    stats: np.ndarray


def _stats(samples: Sequence[Row], table: Sequence[Metric]) -> tuple[np.ndarray, list[int]]:
    parts = [metric.problem_stats(samples) for metric in table]
    return np.array([value for part in parts for value in part], dtype=float), [len(part) for part in parts]


def _slices(sizes: Sequence[int]) -> tuple[slice, ...]:
    starts = np.cumsum([0, *sizes])
    return tuple(slice(int(a), int(b)) for a, b in zip(starts[:-1], starts[1:], strict=True))


@dataclass(frozen=True)
class Problems:
    """Problems under one metric table; ``slices`` is each metric's part of a problem's statistics."""

    table: tuple[Metric, ...]
    items: tuple[Summary, ...]
    slices: tuple[slice, ...]

    @classmethod
    def of_rows(cls, rows: Sequence[Row], table: Sequence[Metric]) -> "Problems":
        """The problems of ``rows`` (each head is its first sample)."""
        items, sizes = [], []
        for samples in by_problem(rows).values():
            stats, sizes = _stats(samples, table)
            items.append(Summary(samples[0], len(samples), stats))
        return cls(tuple(table), tuple(items), _slices(sizes))

    def __len__(self) -> int:
        return len(self.items)

    @property
    def n_rows(self) -> int:
        return sum(item.samples for item in self.items)

    def where(self, keep: Callable[[Summary], bool]) -> "Problems":
        return Problems(self.table, tuple(item for item in self.items if keep(item)), self.slices)

    def split(self, key: Callable[[Row], Hashable]) -> dict[Any, "Problems"]:
        """The problems grouped by ``key(head)``, each group in first-seen order."""
        groups: dict[Any, list[Summary]] = {}
        for item in self.items:
            groups.setdefault(key(item.head), []).append(item)
        return {name: Problems(self.table, tuple(items), self.slices) for name, items in groups.items()}

    def short(self, min_samples: int) -> int:
        """Problems with fewer than ``min_samples`` samples (0 when a metric needs at most one)."""
        return 0 if min_samples <= 1 else sum(item.samples < min_samples for item in self.items)

    def output_name(self, metric: Metric) -> str:
        return metric.name if metric.label is None else metric.label([item.samples for item in self.items])


def joined(parts: Iterable[Problems]) -> Problems:
    """Several groups of distinct problems under one table, as one."""
    parts = list(parts)
    return Problems(parts[0].table, tuple(item for part in parts for item in part.items), parts[0].slices)


class ProblemStream:
    """Problems built from samples given one at a time (in file order): ``expected`` says how many samples each
    problem has, and a problem's samples are held (only the fields its statistics read, and ``keep``) until
    its last arrives. A problem still short at the end is reduced over the samples it got."""

    def __init__(self, table: Sequence[Metric], expected: Mapping[Problem, int], keep: Sequence[str] = ()) -> None:
        self.table, self.expected = tuple(table), expected
        self.fields = tuple(dict.fromkeys([*IDENTITY, *keep, *(f.name for m in self.table for f in m.fields
                                                               if not f.evidence)]))
        self.found: dict[Problem, Summary | list[Row]] = {}  # first-seen order
        self.sizes: list[int] = []

    def add(self, row: Row) -> None:
        key = problem_of(row)
        pending = self.found.setdefault(key, [])
        if not isinstance(pending, list):
            raise ValueError(f"problem {key} has more samples than the {self.expected.get(key, 1)} counted")
        pending.append({name: row.get(name) for name in self.fields if name in row})
        if len(pending) >= self.expected.get(key, 1):
            self._reduce(key, pending)

    def _reduce(self, key: Problem, samples: list[Row]) -> None:
        stats, self.sizes = _stats(samples, self.table)
        self.found[key] = Summary(samples[0], len(samples), stats)

    def problems(self) -> Problems:
        for key, value in list(self.found.items()):
            if isinstance(value, list):
                self._reduce(key, value)
        return Problems(self.table, tuple(self.found.values()), _slices(self.sizes))  # type: ignore[arg-type]
