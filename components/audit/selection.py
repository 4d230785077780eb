"""Cross-lingual selection bottleneck: local majority vs cross-lingual aggregation vs oracle.

Implements section 7 of "Multilingual verifier bias in RLVR" (arXiv 2608.20362):
one problem asked in several languages, ``k`` samples per language, answers
clustered by their trusted-normalized form (``Judgement.answer``; samples
without an answer do not vote).

* **local majority** (target language ``t``): the largest answer cluster among
  the samples of ``t``;
* **cross-lingual aggregation**: among the clusters *already present in t*
  (never borrowing an answer ``t`` did not produce), the one with the most
  samples across all languages of the problem;
* **oracle**: some sample of ``t`` is correct under ``trusted``.

Tie-breaks (label-free and deterministic): local majority — larger cluster,
then the cluster whose first sample has the lowest ``sample_index`` (then the
earliest row). Aggregation — larger cross-lingual support, then larger local
cluster, then the same first-occurrence rule.

Per language: accuracy of each rule over the problems asked in that language,
the share of the selection gap recovered ``(agg - local) / (oracle - local)``
(``None`` when the gap is 0), ``repairs`` (local wrong, aggregated right),
``repairs_cross_lingual`` (repairs whose chosen cluster was strictly smaller
than the local majority in ``t``: the target language alone could not have
picked it, so the repair needed support from other languages),
``repairs_cross_lingual_share`` (their share of the repairs, ``None`` without a
repair: the paper's post-mortem figure) and ``harms`` (local right, aggregated
wrong). ``"mean"`` averages the accuracies over
languages and recomputes the recovered share from those means.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from components.audit.diagnostics import Judgement


@dataclass(frozen=True)
class Choice:
    """The rules' outcomes for one problem in one target language."""

    problem: str
    lang: str
    local: str | None
    aggregated: str | None
    local_correct: bool
    aggregated_correct: bool
    oracle: bool
    cross_lingual: bool  # the aggregated cluster is strictly smaller than the local majority in ``lang``


def _order(items: list[Judgement]) -> list[Judgement]:
    return sorted(items, key=lambda j: (j.sample_index, j.row))


def choose(problem: str, lang: str, target: list[Judgement], everyone: list[Judgement]) -> Choice:
    """Apply the three rules to one problem in one target language."""
    local_count: dict[str, int] = {}
    first: dict[str, int] = {}
    correct: dict[str, bool] = defaultdict(bool)
    for rank, item in enumerate(_order(target)):
        if item.answer is None:
            continue
        local_count[item.answer] = local_count.get(item.answer, 0) + 1
        first.setdefault(item.answer, rank)
        correct[item.answer] |= item.reference
    support: dict[str, int] = defaultdict(int)
    for item in everyone:
        if item.answer in local_count:
            support[item.answer] += 1
    oracle = any(item.reference for item in target)
    if not local_count:
        return Choice(problem, lang, None, None, False, False, oracle, False)
    local = max(local_count, key=lambda a: (local_count[a], -first[a]))
    agg = max(local_count, key=lambda a: (support[a], local_count[a], -first[a]))
    return Choice(
        problem=problem, lang=lang, local=local, aggregated=agg,
        local_correct=correct[local], aggregated_correct=correct[agg], oracle=oracle,
        cross_lingual=local_count[agg] < local_count[local],
    )


def choices(judgements: Iterable[Judgement]) -> list[Choice]:
    """Every (problem, target language) outcome; problems are keyed by ``Judgement.id``."""
    by_problem: dict[str, list[Judgement]] = defaultdict(list)
    for item in judgements:
        by_problem[item.id].append(item)
    out = []
    for problem in sorted(by_problem):
        everyone = by_problem[problem]
        for lang in sorted({item.lang for item in everyone}):
            target = [item for item in everyone if item.lang == lang]
            out.append(choose(problem, lang, target, everyone))
    return out


def gap_recovered(local: float, aggregated: float, oracle: float) -> float | None:
    """Share of the selection gap recovered by aggregation; ``None`` when there is no gap.

    >>> gap_recovered(0.5, 0.75, 1.0)
    0.5
    >>> gap_recovered(1.0, 1.0, 1.0) is None
    True
    """
    gap = oracle - local
    if abs(gap) < 1e-12:
        return None
    return (aggregated - local) / gap


def share(part: int, whole: int) -> float | None:
    """``part / whole``; ``None`` when ``whole`` is 0.

    >>> share(1, 2), share(0, 0)
    (0.5, None)
    """
    return part / whole if whole else None


def _summary(items: list[Choice]) -> dict:
    n = len(items)
    local = sum(c.local_correct for c in items) / n
    agg = sum(c.aggregated_correct for c in items) / n
    oracle = sum(c.oracle for c in items) / n
    repairs = [c for c in items if c.aggregated_correct and not c.local_correct]
    return {
        "problems": n, "local_majority": local, "aggregated": agg, "oracle": oracle,
        "gap_recovered": gap_recovered(local, agg, oracle),
        "repairs": len(repairs), "repairs_cross_lingual": sum(c.cross_lingual for c in repairs),
        "repairs_cross_lingual_share": share(sum(c.cross_lingual for c in repairs), len(repairs)),
        "harms": sum(c.local_correct and not c.aggregated_correct for c in items),
    }


def selection_report(judgements: Iterable[Judgement]) -> dict[str, dict]:
    """Per-language (and ``"mean"``) selection figures; see the module docstring."""
    per_lang: dict[str, list[Choice]] = defaultdict(list)
    for choice in choices(judgements):
        per_lang[choice.lang].append(choice)
    report = {lang: _summary(items) for lang, items in sorted(per_lang.items())}
    if report:
        report["mean"] = _mean(report)
    return report


def _mean(report: Mapping[str, dict]) -> dict:
    rows = list(report.values())
    means = {key: sum(r[key] for r in rows) / len(rows) for key in ("local_majority", "aggregated", "oracle")}
    return {
        "problems": sum(r["problems"] for r in rows), **means,
        "gap_recovered": gap_recovered(means["local_majority"], means["aggregated"], means["oracle"]),
        "repairs": sum(r["repairs"] for r in rows),
        "repairs_cross_lingual": sum(r["repairs_cross_lingual"] for r in rows),
        "repairs_cross_lingual_share": share(sum(r["repairs_cross_lingual"] for r in rows),
                                             sum(r["repairs"] for r in rows)),
        "harms": sum(r["harms"] for r in rows),
    }
