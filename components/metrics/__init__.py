"""Metric objects (a per-row scorer and a corpus reduction each), their uncertainty, and aggregation.

metric (the :class:`Metric` and :class:`RowField` objects), sample (the per-row context every
scorer reads), table (the registry ``METRICS``: every metric, defined once, and the
``Scheme`` a benchmark's rows are scored under: its kind and macro rule, handed in by the callers from
the benchmarks' specs), bootstrap (standard errors and paired intervals by resampling
problems), aggregate (per language / benchmark / language group, under those rules); the
scorers themselves: accuracy (pass@k, avg@k), lcpr (AdaMame C.3 line/word pass, LCB variant),
slc (PCS step-level language consistency, SLC&Acc, top-1 consistency), ttc (test-time compute), qa (LcRL's
fEM, c3Recall and CLR of short answers) and qa_registry (those as the metric table's qa kind).
"""

from components.metrics.accuracy import avg_at_k, avg_at_key, pass_at_k, pass_at_key
from components.metrics.aggregate import (
    IN_DOMAIN_LANGUAGES,
    RESOURCE_LEVELS,
    group_means,
    language_groups,
    notes,
    per_benchmark,
    per_language,
    summarize,
)
from components.metrics.bootstrap import Bootstrap, Estimate, estimate, paired_difference
from components.metrics.lcpr import lcpr_from_rates, line_pass, load_english_words, word_pass
from components.metrics.metric import Metric, RowField
from components.metrics.slc import SLC_THRESHOLD, language_consistency, slc, slc_and_acc, split_steps
from components.metrics.registry import METRICS, Scheme, columns, compared, metric_for, metrics, row_fields
from components.metrics.ttc import ttc_chars, ttc_tokens

__all__ = [
    "IN_DOMAIN_LANGUAGES", "METRICS", "RESOURCE_LEVELS", "SLC_THRESHOLD", "Bootstrap", "Estimate",
    "Metric", "RowField", "Scheme",
    "avg_at_k", "avg_at_key", "columns", "compared", "estimate", "group_means", "language_consistency",
    "language_groups", "lcpr_from_rates", "line_pass", "load_english_words", "metric_for", "metrics", "notes",
    "paired_difference", "pass_at_k", "pass_at_key", "per_benchmark", "per_language", "row_fields", "slc",
    "slc_and_acc", "split_steps", "summarize", "ttc_chars", "ttc_tokens", "word_pass",
]
