"""Teacher reasoning traces and their filter (AdaMame §3.1 "Reasoning Traces", appendix C.1).

The teacher answers each translated query with the language-specific
instruction prepended (``components.data.prompts``, style ``instruction``) at
temperature 1.0. A (query, trace, output) triplet is kept only if

* ``format``: the completion has a closed ``<think>…</think>`` block with a
  non-empty trace and a ``\\boxed{}`` answer after it;
* ``language``: by ``language_filter``: ``lcpr`` (AdaMame) — the trace is in
  the query language by both LCPR levels of ``components.metrics.lcpr`` (line
  level and word level, rule ``adamame`` or ``lcb``; a trace with nothing to
  judge fails); ``slc`` — its step-level language consistency
  (``components.metrics.slc``) is at least ``min_slc``, so code-switched traces
  stay (PCS's cold start); ``none`` — no language check;
* ``incorrect``: the answer after the think block is correct under the named
  verifier (``trusted`` by default).

Every failed check is recorded (a rejected row may carry several reasons), so
retention is reported per language and per reason; AdaMame kept 72.2 % on
average (table 10). A per-language cap samples the kept triplets (AdaMame: 6K).

>>> trace_reasons_format("<think>a</think> so \\\\boxed{3}")
[]
>>> trace_reasons_format("no think \\\\boxed{3}")
['format']
"""

from __future__ import annotations

import random
from collections import Counter
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from components.settings import PromptSettings, SamplingSettings
    from components.generation import Generator
    from components.metrics.lcpr import Detector

REASONS = ("format", "language", "incorrect")


def to_items(rows: list[dict[str, Any]]) -> list[Any]:
    """Translated rows as ``BenchmarkItem``s (for the shared prompt builders)."""
    from components.records import BenchmarkItem

    return [BenchmarkItem(str(r["id"]), "data", r["lang"], r["question"], str(r["gold"])) for r in rows]


def user_prompts(rows: list[dict[str, Any]], prompt: "PromptSettings") -> list[str]:
    """The user turn per row: question + language-specific instruction (no chat template)."""
    from components.data.prompts import user_text

    return [user_text(item, prompt.style, prompt.instruction) for item in to_items(rows)]


def trace_reasons_format(text: str) -> list[str]:
    """``['format']`` unless the completion is ``<think>T</think>R`` with T non-empty and ``\\boxed`` in R."""
    from components.verification import split_think

    split = split_think(text)
    ok = split.has_think and split.trace.strip() and "\\boxed" in split.response
    return [] if ok else ["format"]


def trace_reasons(
    text: str,
    lang: str,
    gold: str,
    detector: "Detector",
    verifier: Callable[..., Any],
    *,
    rule: str = "adamame",
    words: frozenset[str] | None = None,
    language_filter: str = "lcpr",
    min_slc: float | None = None,
) -> list[str]:
    """Every reason to reject one teacher completion (empty list: keep it)."""
    from components.verification import split_think

    reasons = trace_reasons_format(text)
    split = split_think(text)
    trace = split.trace if split.has_think else text
    if not language_passes(trace, lang, detector, language_filter, min_slc=min_slc, rule=rule, words=words):
        reasons.append("language")
    if not verifier(split.response if split.has_think else text, gold, lang).correct:
        reasons.append("incorrect")
    return reasons


def language_passes(trace: str, lang: str, detector: "Detector", language_filter: str, *,
                    min_slc: float | None = None, rule: str = "adamame",
                    words: frozenset[str] | None = None) -> bool:
    """Whether a trace passes the language filter (``lcpr``, ``slc`` with ``min_slc``, or ``none``)."""
    if language_filter == "none":
        return True
    if language_filter == "slc":
        from components.metrics.slc import slc

        value = slc(trace, lang, detector)
        return value is not None and value >= (min_slc or 0.0)
    if language_filter != "lcpr":
        raise ValueError(f"unknown language filter {language_filter!r} (known: lcpr, slc, none)")
    from components.metrics.lcpr import line_pass, word_pass

    line_ok = line_pass(trace, lang, detector, rule, words)
    return line_ok is True and word_pass(trace, lang, detector, rule, words) is not False  # None: not applicable


def canonical_completion(text: str) -> str:
    """``<think>\\nT\\n</think>\\n\\nR`` from any well-formed teacher output (SFT target)."""
    from components.verification import split_think

    split = split_think(text)
    return f"<think>\n{split.trace.strip()}\n</think>\n\n{split.response.strip()}"


def filter_traces(
    rows: list[dict[str, Any]],
    completions: list[str],
    detector: "Detector",
    verifier: Callable[..., Any],
    *,
    rule: str = "adamame",
    words: frozenset[str] | None = None,
    language_filter: str = "lcpr",
    min_slc: float | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Split (row, completion) pairs into kept SFT rows and rejected rows (``reasons``)."""
    kept, rejected = [], []
    for row, text in zip(rows, completions):
        reasons = trace_reasons(text, row["lang"], str(row["gold"]), detector, verifier, rule=rule, words=words,
                                language_filter=language_filter, min_slc=min_slc)
        if reasons:
            rejected.append({**row, "completion": text, "reasons": ",".join(reasons), "reason": reasons[0]})
        else:
            kept.append({**row, "completion": canonical_completion(text), "teacher_output": text})
    return kept, rejected


def open_think(prompt: str) -> str:
    """The think block a prompt opened and left open (chat template or prefix control), else ``""``.

    >>> open_think("Q\\n\\n<think>\\nD'accord,")
    "<think>\\nD'accord,"
    >>> open_think("<think>\\n\\n</think>\\n\\n"), open_think("Q")
    ('', '')
    """
    start = prompt.rfind("<think>")
    return prompt[start:] if start >= 0 and "</think>" not in prompt[start:] else ""


def generate_traces(
    rows: list[dict[str, Any]], prompts: list[str], generator: "Generator", sampling: "SamplingSettings"
) -> list[str]:
    """One teacher completion per row (``n`` forced to 1), with any think block the prompt opened."""
    outputs = generator.generate(prompts, sampling.model_copy(update={"n": 1}))
    return [open_think(prompt) + completions[0].text for prompt, completions in zip(prompts, outputs)]


def retention(
    kept: list[dict[str, Any]], rejected: list[dict[str, Any]], languages: list[str]
) -> dict[str, dict[str, float]]:
    """Per language and ``overall``: total, kept, rate and one count per rejection reason.

    >>> r = retention([{"lang": "fr"}], [{"lang": "fr", "reasons": "format,incorrect"}], ["fr", "ja"])
    >>> r["fr"]["rate"], r["fr"]["reason_incorrect"], r["ja"]["total"], r["overall"]["kept"]
    (0.5, 1.0, 0.0, 1.0)
    """
    out: dict[str, dict[str, float]] = {}
    for lang in [*languages, "overall"]:
        mine = lambda rows: [r for r in rows if lang == "overall" or r["lang"] == lang]  # noqa: E731
        k, rej = mine(kept), mine(rejected)
        counts = Counter(reason for r in rej for reason in str(r["reasons"]).split(",") if reason)
        total = len(k) + len(rej)
        out[lang] = {"total": float(total), "kept": float(len(k)), "rate": len(k) / total if total else 0.0}
        out[lang].update({f"reason_{name}": float(counts.get(name, 0)) for name in REASONS})
    return out


def cap_per_language(rows: list[dict[str, Any]], cap: int | None, seed: int) -> list[dict[str, Any]]:
    """At most ``cap`` rows per language, sampled with ``seed`` (order kept); ``None``: all.

    >>> rows = [{"lang": "fr", "i": i} for i in range(5)] + [{"lang": "ja", "i": 9}]
    >>> [r["i"] for r in cap_per_language(rows, 2, 0) if r["lang"] == "fr"].__len__()
    2
    """
    if cap is None:
        return list(rows)
    rng = random.Random(seed)
    chosen: set[int] = set()
    for lang in sorted({r["lang"] for r in rows}):
        indices = [i for i, r in enumerate(rows) if r["lang"] == lang]
        chosen.update(indices if len(indices) <= cap else rng.sample(indices, cap))
    return [r for i, r in enumerate(rows) if i in chosen]
