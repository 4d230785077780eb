"""The open-domain QA entries of the metric table (kind ``qa``): LcRL's per-language numbers as metric objects.

Each is a mean over the rows (samples) of its per-answer value from ``components.metrics.qa``,
with its standard error and n: ``fem``, ``c3recall``, ``clr`` (the share of answers in the
query's language: an answer that is missing counts as not), ``em``, and ``searches`` (the mean
number of retrievals a rollout made, ``<information>`` blocks in its completion). A row's
``Sample`` provides the answer (``Sample.qa_answer``), the golds and the language detector.

>>> sorted(QA_METRICS), QA_METRICS["fem"].kind, QA_METRICS["searches"].bounded
(['c3recall', 'clr', 'em', 'fem', 'searches'], 'qa', False)
"""

from __future__ import annotations

from components.metrics.metric import Metric, RowField, row_mean
from components.metrics.qa import answer_in_language, c3_recall, exact_match, flexible_exact_match

FIELDS = {
    "em": RowField("em", lambda s: exact_match(s.qa_answer, s.golds)),
    "fem": RowField("fem", lambda s: flexible_exact_match(s.qa_answer, s.golds)),
    "c3recall": RowField("c3recall", lambda s: c3_recall(s.qa_answer, s.golds)),
    "clr": RowField("in_language", lambda s: answer_in_language(s.qa_answer, s.lang, s.rules.detector)),
    "searches": RowField("searches", lambda s: s.searches),
}


def _mean_of(name: str, **options) -> Metric:
    field = FIELDS[name]
    return row_mean(name, field, lambda row: row.get(field.name), column=True, kind="qa", **options)


QA_METRICS: dict[str, Metric] = {
    "fem": _mean_of("fem", compared=True),
    "c3recall": _mean_of("c3recall", compared=True),
    "clr": _mean_of("clr", compared=True),
    "em": _mean_of("em"),
    "searches": _mean_of("searches", bounded=False),
}
