"""Degenerate-repetition detection: PCS's repetition gate ``r_rep``.

PCS ("Progressive code-switching", reward modelling) gates every reward on
``r_rep = 1`` — "no repetition in the response" — and defers the exact rule to
its appendix A, which our seed does not include. The rule implemented here is
ours, chosen to catch the looping failure of long-CoT models (the same phrase,
sentence or paragraph emitted again and again, often until the length limit)
while leaving ordinary math prose alone:

* the text is cut into *units*: each CJK/kana/Thai character is one unit (those
  scripts do not separate words with spaces), every other run of word
  characters is one unit, and every other non-space symbol is one unit;
* the text is **degenerate** when some block of ``p`` consecutive units
  (``1 ≤ p ≤ max_period``) is immediately repeated so that it occurs at least
  ``min_repeats`` times in a row **and** the repeated stretch (after its first
  copy) spans at least ``min_span`` units.

So "the the the" is fine (span 2 < 24), a 10-word sentence written 3 times in a
row is not (span 20 < 24, but 4 times: span 30), and a single token repeated 25
times is degenerate. Detection is a vectorised scan (numpy) over every period:
O(n · max_period) comparisons, about a millisecond for a 4k-token trace.

>>> has_degenerate_repetition("Let x = 3. Then 2x = 6, so the answer is 6.")
False
>>> has_degenerate_repetition("Wait, let me check again. " * 6)
True
>>> has_degenerate_repetition("答えは5です。" * 5)
True
>>> repetition_reward("ok " * 3)
1.0
"""

from __future__ import annotations

import re

_NOSPACE = "\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f"
_UNIT = re.compile(rf"[{_NOSPACE}]|[^\W{_NOSPACE}]+|[^\w\s]")


def split_units(text: str) -> list[str]:
    """Cut ``text`` into repetition units (see the module docstring).

    >>> split_units("x=3, 答え")
    ['x', '=', '3', ',', '答', 'え']
    """
    return _UNIT.findall(text)


def longest_repeat(units: list[str], max_period: int = 128) -> tuple[int, int]:
    """``(period, run)`` of the longest stretch where ``units[j] == units[j + period]`` holds.

    ``run`` equal positions with period ``p`` mean the block repeats ``1 + run / p`` times.

    >>> longest_repeat(list("abcabcabcx"))
    (3, 6)
    """
    import numpy as np

    if len(units) < 2:
        return 0, 0
    index: dict[str, int] = {}
    ids = np.fromiter((index.setdefault(u, len(index)) for u in units), dtype=np.int64, count=len(units))
    best = (0, 0)
    for period in range(1, min(max_period, len(ids) - 1) + 1):
        equal = ids[period:] == ids[:-period]
        if not equal.any():
            continue
        padded = np.concatenate(([0], equal.view(np.int8), [0]))
        edges = np.flatnonzero(np.diff(padded))
        run = int((edges[1::2] - edges[::2]).max())
        if run > best[1]:
            best = (period, run)
    return best


def has_degenerate_repetition(
    text: str, *, max_period: int = 128, min_repeats: int = 3, min_span: int = 24
) -> bool:
    """Whether ``text`` contains a block repeated ``min_repeats`` times in a row spanning ``min_span`` units."""
    import numpy as np

    units = split_units(text)
    if len(units) <= min_span:
        return False
    index: dict[str, int] = {}
    ids = np.fromiter((index.setdefault(u, len(index)) for u in units), dtype=np.int64, count=len(units))
    for period in range(1, min(max_period, len(ids) - 1) + 1):
        needed = max((min_repeats - 1) * period, min_span)
        if needed > len(ids) - period:
            break
        equal = ids[period:] == ids[:-period]
        if int(equal.sum()) < needed:
            continue
        padded = np.concatenate(([0], equal.view(np.int8), [0]))
        edges = np.flatnonzero(np.diff(padded))
        if int((edges[1::2] - edges[::2]).max()) >= needed:
            return True
    return False


def repetition_reward(text: str, *, max_period: int = 128, min_repeats: int = 3, min_span: int = 24) -> float:
    """PCS ``r_rep``: 1.0 when the text has no degenerate repetition, else 0.0."""
    degenerate = has_degenerate_repetition(text, max_period=max_period, min_repeats=min_repeats, min_span=min_span)
    return 0.0 if degenerate else 1.0
