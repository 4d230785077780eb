"""Text labels on a scatter plot that never sit on one another.

matplotlib places each ``annotate`` where it is told and does not move labels apart
(no library the project uses does: adjustText would be a new dependency for one
plot), so labels of points at the same place (two languages both at LCPR 1.0,
accuracy 0.0; ``in_domain`` on top of its only language) are drawn over each other.
``merged_labels`` joins the labels of points closer than ``near`` on both axes into one
(``en, fr``) at their first point, and ``label_offsets`` stacks the labels that are still
close, so each label is read once. Written by hand: it is a few lines of grouping.

>>> merged_labels([("fr", 1.0, 0.0), ("en", 1.0, 0.0), ("ja", 0.5, 0.2)])
[('fr, en', 1.0, 0.0), ('ja', 0.5, 0.2)]
>>> label_offsets([("a", 0.5, 0.5), ("b", 0.52, 0.5), ("c", 0.9, 0.1)], near=0.1)
[(4, 4), (4, 14), (4, 4)]
"""

from __future__ import annotations

from collections.abc import Sequence

Label = tuple[str, float, float]
LINE_PT = 10  # the height of one label, in points


def close(a: Label, b: Label, near: float) -> bool:
    return abs(a[1] - b[1]) < near and abs(a[2] - b[2]) < near


def merged_labels(points: Sequence[Label], near: float = 0.02) -> list[Label]:
    """One label per group of points closer than ``near`` on both axes: their texts joined, at the first point."""
    merged: list[Label] = []
    for point in points:
        index = next((i for i, kept in enumerate(merged) if close(kept, point, near)), None)
        if index is None:
            merged.append(point)
        else:
            text, x, y = merged[index]
            merged[index] = (f"{text}, {point[0]}", x, y)
    return merged


def label_offsets(labels: Sequence[Label], near: float = 0.08) -> list[tuple[int, int]]:
    """Each label's offset from its point in points: stacked one line higher for every earlier label near it."""
    return [(4, 4 + LINE_PT * sum(1 for earlier in labels[:i] if close(earlier, label, near)))
            for i, label in enumerate(labels)]
