"""Per-sample scorers and corpus metrics, shared by evaluation and rewards.

accuracy (pass@k, avg@k), lcpr (AdaMame C.3 line/word pass, LCB variant), slc (PCS step-level
language consistency, SLC&Acc, top-1 consistency), ttc (test-time compute), table (the one
list of corpus metrics: row fields, aggregation, table column, direction, and the benchmarks'
macro rules) and aggregate (per language / benchmark / language group, under those rules).
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
from components.metrics.lcpr import (
    RULES as LCPR_RULES,
)
from components.metrics.lcpr import (
    lcpr_from_rates,
    line_pass,
    load_english_words,
    word_pass,
)
from components.metrics.slc import SLC_THRESHOLD, language_consistency, slc, slc_and_acc, split_steps
from components.metrics.table import COLUMNS, MACRO_RULES, ROW_FIELDS, Metric, metric_for, metrics
from components.metrics.ttc import ttc_chars, ttc_tokens

__all__ = [
    "COLUMNS", "IN_DOMAIN_LANGUAGES", "LCPR_RULES", "MACRO_RULES", "RESOURCE_LEVELS", "ROW_FIELDS",
    "SLC_THRESHOLD", "Metric",
    "avg_at_k", "avg_at_key", "group_means", "language_consistency", "language_groups",
    "lcpr_from_rates", "line_pass", "load_english_words", "metric_for", "metrics", "notes", "pass_at_k",
    "pass_at_key", "per_benchmark", "per_language", "slc", "slc_and_acc", "split_steps", "summarize",
    "ttc_chars", "ttc_tokens", "word_pass",
]
