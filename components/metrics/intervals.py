"""Intervals that hold at the boundary and at small n: Wilson's score interval and Newcombe's difference.

Why not the bootstrap's percentiles. A bootstrap over problems collapses where the data do:
8 of 8 correct resamples to 1.0 every time, so its interval is ``[1, 1]``, and a delta over
four problems that all improved is ``[+1, +1]``. Yet 8 of 8 is consistent with a true rate
of 0.7. The score interval of a proportion (Wilson, 1927) inverts the binomial score test
and keeps its width at 0 and 1: 8/8 gives ``[0.676, 1]``, 0/4 ``[0, 0.490]``.

What is estimated decides the method.

* **A rate** (a metric whose values lie in [0, 1]: accuracy, pass@k, LCPR, SLC, TTC …):
  Wilson's interval at the estimate's *effective* number of units. The cluster bootstrap
  (``components.metrics.bootstrap``) gives the standard error ``s`` of exactly the
  reported statistic, clustering and macro weights included; ``n_eff = p(1 - p) / s²`` is
  the number of independent Bernoulli trials with that error (Kish's design effect,
  ``n / n_eff``, applied to Wilson's interval, as survey statistics does for clustered
  proportions). Where the bootstrap has nothing to tell (``s = 0``: every unit alike, the
  value at 0 or 1) ``n_eff`` is the number of independent units judged, the problems.
* **A difference of two rates**: Newcombe's square-and-add interval (Newcombe 1998, his
  method 10; Zou and Donner's MOVER in general): from each rate's own Wilson limits,
  ``low = d - sqrt((p1 - l1)² + (u2 - p2)² - 2 r (p1 - l1)(u2 - p2))`` and symmetrically
  for ``high``. For two models judged on the same problems ``r`` is the correlation of the
  two statistics over the paired bootstrap's resamples with Newcombe's continuity correction
  of his paired method (``corrected_correlation``; 0 with no variance on one side): without
  it the interval undercovers on a dozen problems (0.90 instead of 0.95 when simulated at
  16), with it coverage is 0.94-0.98 from 8 problems up. For a run against a paper the two
  are independent, ``r = 0``.
* **Anything else** (a count such as ``searches``) keeps the bootstrap's percentiles.

scipy's ``binomtest(...).proportion_ci(method="wilson")`` is the reference for integer
counts (tests hold these formulas against it). It takes integer successes only, and an
effective count is not one, so the closed form is written here; Newcombe's combination is
three lines scipy does not offer.

>>> [round(x, 3) for x in wilson(1.0, 8)], [round(x, 3) for x in wilson(0.0, 4)]
([0.676, 1.0], [0.0, 0.49])
>>> [round(x, 4) for x in newcombe(56 / 70, wilson(56 / 70, 70), 48 / 80, wilson(48 / 80, 80))]
[0.0524, 0.3339]
"""

from __future__ import annotations

import math

Z95 = 1.959963984540054  # two-sided 95% quantile of the standard normal


def z_of(confidence: float) -> float:
    """The two-sided normal quantile of ``confidence`` (1.96 at 0.95)."""
    if confidence == 0.95:
        return Z95
    from scipy.stats import norm

    return float(norm.ppf(0.5 + confidence / 2))


def wilson(p: float, n: float, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval of a proportion ``p`` observed over ``n`` (possibly effective) trials."""
    if n <= 0:
        raise ValueError(f"Wilson's interval needs n > 0, got {n}")
    p = min(1.0, max(0.0, p))
    z = z_of(confidence)
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def effective_n(p: float, stderr: float | None, units: int) -> float:
    """Independent trials with the standard error ``stderr`` at ``p`` (``units`` when it says nothing)."""
    if stderr is None or stderr <= 0 or not 0 < p < 1:
        return float(units)
    return p * (1 - p) / (stderr * stderr)


def rate_interval(p: float | None, stderr: float | None, units: int,
                  confidence: float = 0.95) -> tuple[float | None, float | None]:
    """Wilson's interval of a rate at its effective n; ``(None, None)`` with fewer than two units or no error."""
    if p is None or stderr is None or units < 2:
        return None, None
    return wilson(p, effective_n(p, stderr, units), confidence)


def newcombe(p1: float, limits1: tuple[float, float], p2: float, limits2: tuple[float, float],
             correlation: float = 0.0) -> tuple[float, float]:
    """Newcombe's square-and-add interval of ``p1 - p2`` from each one's limits, for correlated estimates."""
    r = 0.0 if not math.isfinite(correlation) else min(1.0, max(-1.0, correlation))
    (l1, u1), (l2, u2) = limits1, limits2
    d = p1 - p2
    below = (p1 - l1) ** 2 + (u2 - p2) ** 2 - 2 * r * (p1 - l1) * (u2 - p2)
    above = (u1 - p1) ** 2 + (p2 - l2) ** 2 - 2 * r * (u1 - p1) * (p2 - l2)
    return d - math.sqrt(max(below, 0.0)), d + math.sqrt(max(above, 0.0))


def as_rate(bounded: bool, *values: float | None) -> bool:
    """Whether values get a rate's intervals: the metric says it is one and every value lies in [0, 1]
    (a metric registered as a rate by mistake falls back to the bootstrap rather than to nonsense)."""
    return bounded and all(v is not None and 0.0 <= v <= 1.0 for v in values)


def corrected_correlation(r: float, p1: float, p2: float, n: float) -> float:
    """Newcombe's continuity-corrected correlation of a paired difference (his method 10 for paired data).

    For a 2x2 table of N paired verdicts, phi = (AD - BC) / sqrt(margins); Newcombe takes
    ``(AD - BC - N/2) / sqrt(margins)`` when AD > BC (0 when that is negative or a margin is 0), which
    in terms of the rates is ``phi - 1 / (2 N sqrt(p1 (1 - p1) p2 (1 - p2)))``. Here ``r`` is the
    bootstrap's correlation of the two statistics and ``n`` the units both were judged on.
    """
    spread = p1 * (1 - p1) * p2 * (1 - p2)
    if r <= 0 or spread <= 0 or n <= 0:
        return min(r, 0.0) if spread > 0 else 0.0
    return max(0.0, r - 1 / (2 * n * math.sqrt(spread)))


def excludes_zero(low: float | None, high: float | None) -> bool:
    """Whether an interval lies wholly on one side of 0 (``False`` without one)."""
    return low is not None and high is not None and (low > 0 or high < 0)
