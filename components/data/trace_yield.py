"""How many teacher traces a data stage will keep, measured on a probe before the whole set is generated.

A trace survives only when it is in the query's language, correct and well formed, and how often
that happens depends on the teacher and the prompt more than on anything a profile states: a teacher
that seldom reasons in the query's language keeps a few percent. The data stage therefore generates
a first ``probe_per_language`` queries of each language, filters them, and projects each language's
kept set from the probe's retention: its 95% Wilson score interval (``scipy.stats.binomtest``), whose
upper end is the most the full set can keep with that confidence. When even that projects fewer than
``min_share`` of the language's target (``per_language``, or every query of the language without a
cap), the stage stops before the rest is generated, naming the language, the measured rate, the
projection and the keys that change it. Written here because no data library probes a filter's yield.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class YieldProjection:
    """One language's probe: retention with its Wilson interval, and the kept set it projects."""

    language: str
    probed: int
    kept: int
    rate_low: float
    rate_high: float
    queries: int  # the language's queries in the whole set
    target: int  # the traces the profile asks for: per_language, or every query without a cap

    @property
    def projected(self) -> tuple[int, int]:
        """The kept set's range at the interval's ends (never above the target)."""
        return (min(int(self.queries * self.rate_low), self.target),
                min(int(self.queries * self.rate_high), self.target))

    def short_of(self, min_share: float) -> bool:
        """Whether even the interval's upper end keeps fewer than ``min_share`` of the target."""
        return self.projected[1] < min_share * self.target

    def text(self) -> str:
        low, high = self.projected
        return (f"{self.language}: kept {self.kept} of {self.probed} probed ({self.kept / self.probed:.1%}, 95% "
                f"Wilson {self.rate_low:.1%}–{self.rate_high:.1%}) -> {low:,}–{high:,} of {self.queries:,} queries, "
                f"target {self.target:,}")

    def as_dict(self) -> dict[str, float]:
        low, high = self.projected
        return {"probed": float(self.probed), "kept": float(self.kept), "rate_low": self.rate_low,
                "rate_high": self.rate_high, "projected_low": float(low), "projected_high": float(high),
                "target": float(self.target)}


class TraceShortfallError(RuntimeError):
    """The probe projects a kept set far below the profile's target: the rest is not generated."""


def wilson(kept: int, total: int) -> tuple[float, float]:
    """The 95% Wilson score interval of ``kept`` / ``total`` (scipy's ``binomtest``).

    >>> [round(x, 3) for x in wilson(8, 8)], [round(x, 3) for x in wilson(0, 4)]
    ([0.676, 1.0], [0.0, 0.49])
    """
    from scipy.stats import binomtest

    interval = binomtest(kept, total).proportion_ci(confidence_level=0.95, method="wilson")
    return float(interval.low), float(interval.high)


def split_probe(rows: list[dict[str, Any]], per_language: int) -> tuple[list[int], list[int]]:
    """Row indices of the probe (the first ``per_language`` rows of each language, in order) and of the rest.

    >>> split_probe([{"lang": "fr"}, {"lang": "fr"}, {"lang": "ja"}, {"lang": "fr"}], 2)
    ([0, 1, 2], [3])
    """
    seen: Counter[str] = Counter()
    probe, rest = [], []
    for index, row in enumerate(rows):
        seen[row["lang"]] += 1
        (probe if seen[row["lang"]] <= per_language else rest).append(index)
    return probe, rest


def project(probe_kept: list[dict[str, Any]], probe_rows: list[dict[str, Any]], rows: list[dict[str, Any]],
            per_language: int | None) -> list[YieldProjection]:
    """Each probed language's retention and projected kept set over ``rows`` (the whole set)."""
    probed, kept, queries = (Counter(r["lang"] for r in group) for group in (probe_rows, probe_kept, rows))
    out = []
    for language in sorted(probed):
        low, high = wilson(kept[language], probed[language])
        target = min(per_language, queries[language]) if per_language else queries[language]
        out.append(YieldProjection(language, probed[language], kept[language], low, high, queries[language], target))
    return out


def refuse_shortfall(projections: list[YieldProjection], min_share: float) -> None:
    """``TraceShortfallError`` naming every language whose projection is below ``min_share`` of its target."""
    short = [p for p in projections if p.short_of(min_share)]
    if not short:
        return
    raise TraceShortfallError(
        "data.traces: the probe projects too few traces, so the rest was not generated: "
        + "; ".join(p.text() for p in short)
        + f" (below data.traces.early_stop.min_share {min_share:g} of the target). Change the teacher or its "
          "prompt (data.traces.model, data.traces.prompt), the filter (data.traces.language_filter), or lower "
          "data.traces.per_language; data.traces.early_stop.probe_per_language sets the probe's size")
