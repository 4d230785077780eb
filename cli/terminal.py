"""What a command prints: progress lines on stderr as it runs, a result a person reads on stdout at the end.

Progress (``components.progress``: one record per update of a line such as
``sft`` or ``generate base``) is shown by ``ProgressHandler`` on stderr. On a
terminal each update rewrites its line in place (a carriage return and ANSI
erase-line), so a stage is one line however many steps it has, and a line is
closed when its stage says it is final or another line starts. Written to a
file or a pipe there are no escapes: a line is printed when it is a stage's
first or last, or when ``every_s`` seconds passed since that stage's last
printed line, so a log holds a few lines per stage.

stdout holds only the result: a text for a person by default (``recipe_text``,
``verify_text``, ``summary_text``), or with ``--json`` the machine-readable
result and nothing else.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import textwrap
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any

from components.progress import logger, record_fields

ERASE_LINE = "\r\x1b[K"


class ProgressHandler(logging.Handler):
    """Shows progress records on ``stream``: rewritten in place on a terminal, throttled otherwise."""

    def __init__(self, stream: IO[str] | None = None, *, every_s: float = 20.0, tty: bool | None = None,
                 clock: Callable[[], float] = time.monotonic):
        super().__init__(logging.INFO)
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.every_s = every_s
        self.clock = clock
        self.open_key: str | None = None  # the line being rewritten (terminal only)
        self.printed: dict[str, float] = {}  # key -> when its last line was printed (files and pipes)

    def emit(self, record: logging.LogRecord) -> None:
        key, line, final = record_fields(record)
        try:
            self._show_in_place(key, line, final) if self.tty else self._show_throttled(key, line, final)
            self.stream.flush()
        except (OSError, ValueError):  # a closed terminal: nothing to show it on
            pass

    def _show_in_place(self, key: str, line: str, final: bool) -> None:
        if self.open_key is not None and self.open_key != key:
            self.stream.write("\n")
        self.stream.write(ERASE_LINE + line + ("\n" if final else ""))
        self.open_key = None if final else key

    def _show_throttled(self, key: str, line: str, final: bool) -> None:
        now = self.clock()
        last = self.printed.get(key)
        if final or last is None or now - last >= self.every_s:
            self.stream.write(line + "\n")
            self.printed[key] = now
        if final:
            self.printed.pop(key, None)

    def close_line(self) -> None:
        """End a line left open on a terminal (before other output)."""
        if self.open_key is not None:
            self.stream.write("\n")
            self.stream.flush()
            self.open_key = None


def install_progress(stream: IO[str] | None = None) -> ProgressHandler:
    """Show this process's progress lines (and those relayed from its children) on ``stream`` (stderr)."""
    progress = logger()
    for handler in [h for h in progress.handlers if isinstance(h, ProgressHandler)]:
        progress.removeHandler(handler)
    handler = ProgressHandler(stream)
    progress.addHandler(handler)
    return handler


def close_progress() -> None:
    """End an open progress line before the result is printed."""
    for handler in logger().handlers:
        if isinstance(handler, ProgressHandler):
            handler.close_line()


def as_json(result: Any) -> str:
    """The machine-readable result (what ``--json`` prints and ``--out`` writes); a URL in it shows no user or
    password (``components.settings.redact_credentials``)."""
    from components.settings import redact_credentials

    return redact_credentials(json.dumps(result, ensure_ascii=False, indent=2, default=str))  # the text, not a copy


# ---------------------------------------------------------------- the recipe


def recipe_text(summary: Mapping[str, Any], flow_run_url: str | None, in_domain: Sequence[str] | None = None,
                command: str = "recipe") -> str:
    """The comparison's headline and where its full table is, the registered model, then where the runs are
    (``components.reports.comparison_headline``: lines that fit 100 columns; the full table is in ``--json``)."""
    from components.reports.comparison_headline import headline_text

    parts = []
    rows = ((summary.get("comparison") or {}).get("summary") or {}).get("rows")
    if rows:
        parts.append(headline_text(rows, summary.get("run_id"), in_domain, command))
    if summary.get("paper"):
        parts.append("held against the paper's table: in the MLflow run below (artifact comparison/paper/paper.txt)")
    registered = summary.get("registered") or {}
    if registered.get("uri"):
        parts.append(f"registered: {registered['uri']} (alias {registered.get('alias')})")
    skipped = load_error_text(summary.get("evaluations") or [])
    if skipped:
        parts.append(skipped)
    parts.append("\n".join(where_lines(summary.get("run_url"), flow_run_url)))
    return "\n\n".join(parts)


LOCAL_RUN = re.compile(r"^(?P<store>\S+) \(run (?P<run>\w+); open with: (?P<open>.+)\)$")


def where_lines(run_url: str | None, flow_run_url: str | None) -> list[str]:
    """``MLflow run: …`` (the UI's page, or the store and how to open it) and ``Prefect flow run: …`` when known.

    A run in a local store (``runtime.tracking.run_url``: the store, the run id and the command that opens it)
    takes two lines, so neither repeats the store's path.
    """
    from components.settings import redact_credentials

    run_url, flow_run_url = redact_credentials(run_url), redact_credentials(flow_run_url)
    local = LOCAL_RUN.match(run_url or "")
    if local:
        lines = [f"MLflow run: {local['run']} in {local['store']}", f"  open with: {local['open']}"]
    else:
        lines = [f"MLflow run: {run_url}"] if run_url else []
    if flow_run_url:
        lines.append(f"Prefect flow run: {flow_run_url}")
    return lines


VALUE_LEGEND = ("value [95% interval] (n = independent units: problems, a problem's samples and translations "
                "counted once); rates: Wilson's score interval at the bootstrap's effective n, as in the comparison "
                "tables; others ±1 bootstrap standard error; no interval under two problems")


def metric_blocks(tag: str, benchmark: str, language_table: Sequence[Mapping[str, Any]],
                  metrics: Sequence[str] | None = None) -> str:
    """One model's metrics on one benchmark, a block per metric (``components.reports.comparison.format_table``'s
    layout, without its legend, which explains deltas)."""
    from components.reports.comparison import benchmark_columns, format_table

    rows = [{"model": tag, "benchmark": benchmark, **row} for row in language_table]
    table = format_table(rows, tag, metrics or benchmark_columns(benchmark, rows))
    return table.split("\n\n", 1)[1].strip("\n")


def evaluation_text(summary: Mapping[str, Any]) -> str:
    """One model's evaluation: per benchmark and language each compared metric with its 95% interval (a rate) or
    standard error, and n."""
    from components.reports.benchmark import read_report

    tag = summary["model"]["tag"]
    blocks = [metric_blocks(tag, name, read_report(name, benchmark["report"]["path"]).language_table)
              for name, benchmark in summary["benchmarks"].items()]
    legend = "\n".join(textwrap.wrap(VALUE_LEGEND, width=100))
    skipped = load_error_text([summary])
    return "\n\n".join([legend, *blocks, *([skipped] if skipped else []),
                         "\n".join(where_lines(summary.get("run_url"), None))])


def load_error_text(evaluations: Sequence[Mapping[str, Any]]) -> str:
    """The rows each benchmark skipped as unreadable (``FILE:LINE: field F: problem``), once per benchmark.

    >>> mgsm = {"load_errors": 12, "load_error_lines": ["m.tsv:3: field x: y"]}
    >>> print(load_error_text([{"benchmarks": {"mgsm": mgsm}}]))
    mgsm: 12 rows skipped as unreadable (load_errors):
      m.tsv:3: field x: y
      ... 11 more: evaluation/mgsm/mgsm_load_errors.txt in the MLflow run
    """
    lines, seen = [], set()
    for evaluation in evaluations:
        for name, benchmark in (evaluation.get("benchmarks") or {}).items():
            count = benchmark.get("load_errors") or 0
            if not count or name in seen:
                continue
            seen.add(name)
            shown = benchmark.get("load_error_lines") or []
            more = f"  ... {count - len(shown)} more: evaluation/{name}/{name}_load_errors.txt in the MLflow run"
            lines += [f"{name}: {count} row{'s' if count != 1 else ''} skipped as unreadable (load_errors):",
                      *(f"  {line}" for line in shown), *([more] if count > len(shown) else [])]
    return "\n".join(lines)


def score_text(result: Mapping[str, Any]) -> str:
    """``polyreason score``'s table: per benchmark, every column of the language table (the headline accuracy,
    LCPR, LPR, WPR, SLC, SLC&Acc, TTC) per language and overall, with its 95% interval and n."""
    from components.metrics.registry import table_columns
    from components.reports.benchmark import benchmark_report

    blocks = []
    for name, cells in (result.get("by_benchmark") or {}).items():
        report = benchmark_report(name, {"aggregate": cells, "headline": result.get("headline")})
        columns = table_columns(cells.get("overall", {}), report.headline)
        blocks.append(metric_blocks("value", name, report.language_table, columns))
    notes = [f"note: {note}" for note in result.get("notes", [])]
    lines = [*textwrap.wrap(VALUE_LEGEND, width=100), "", "\n\n".join(blocks), *([""] + notes if notes else [])]
    return "\n".join(lines + error_lines(result.get("errors", [])))


def explain_text(explained: Mapping[str, Any]) -> str:
    """``score --explain``: each matching row's line-level verdict, line by line."""
    from components.reports.comparison import aligned

    if not explained["rows"]:
        return f"no valid row with id {explained['id']!r}" + "\n".join(error_lines(explained.get("errors", [])))
    blocks = []
    for row in explained["rows"]:
        sample = "" if row.get("sample_index") is None else f", sample {row['sample_index']}"
        head = (f"id {row['id']}, lang {row['lang']}{sample}, rule {explained['rule']}: "
                f"line level {_verdict(row['line_pass'])}, word level {_verdict(row['word_pass'])}")
        table = [["verdict", "lang", "margin", "words", "chars", "why undecided", "line (after cleaning)"]]
        table += [[line["verdict"].upper() if line["verdict"] == "fail" else line["verdict"], line["detected"] or "-",
                   f"{line['margin']:.3f}", str(line["words"]), str(line["chars"]), line["reason"], line["line"]]
                  for line in row["lines"]]
        blocks.append("\n".join([head, *("  " + line for line in aligned(table))]))
    legend = ("margin: lingua's top confidence above the runner-up's (a line read as the query language) or above "
              "the query language's (another language); a line is undecided when its residue is too short or the "
              "margin too small (components.metrics.lcpr_lines); the trace fails when a decided line fails")
    return "\n\n".join([*blocks, "\n".join(textwrap.wrap(legend, width=100))])


def _verdict(value: bool | None) -> str:
    return {True: "pass", False: "FAIL", None: "none (nothing decided)"}[value]


def summary_text(summary: Mapping[str, Any], flow_run_url: str | None = None) -> str:
    """A stage command's result without a comparison: what it made, in ``key: value`` lines, and where its run is."""
    lines = [f"{key}: {value}" for key, value in _leaves(summary) if key not in ("run_url",)]
    return "\n".join([*lines[:20], *([f"... {len(lines) - 20} more (--json shows all)"] if len(lines) > 20 else []),
                      *where_lines(summary.get("run_url"), flow_run_url)])


def _leaves(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """The scalar fields of a nested summary, as dotted keys (paths and ids; long lists are counted)."""
    if isinstance(value, Mapping):
        return [leaf for key, item in value.items() for leaf in _leaves(item, f"{prefix}{key}.")]
    if isinstance(value, list):
        if all(not isinstance(item, (Mapping, list)) for item in value) and len(value) <= 8:
            return [(prefix[:-1], ", ".join(map(str, value)))] if value else []
        return [(prefix[:-1], f"{len(value)} items")]
    return [] if value is None else [(prefix[:-1], value)]


# ---------------------------------------------------------------- verify


def proportion(hits: int, n: int) -> str:
    """``0.667 [0.208, 0.939] (n 3)``: a proportion with its Wilson 95% interval (``scipy.stats.binomtest``)."""
    if n == 0:
        return "-"
    from scipy.stats import binomtest

    interval = binomtest(hits, n).proportion_ci(confidence_level=0.95, method="wilson")
    return f"{hits / n:.3f} [{interval.low:.3f}, {interval.high:.3f}] (n {n})"


def verify_rows_table(rows: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """One row per language and ``overall``: accuracy, and FNR/FPR where rows carry the right verdict."""
    languages = sorted({row["lang"] for row in rows})
    table = []
    for lang, group in [*((lang, [r for r in rows if r["lang"] == lang]) for lang in languages), ("overall", rows)]:
        positives = [r for r in group if r.get("expected") is True]
        negatives = [r for r in group if r.get("expected") is False]
        table.append([lang, proportion(sum(bool(r["correct"]) for r in group), len(group)),
                      proportion(sum(not r["correct"] for r in positives), len(positives)),
                      proportion(sum(bool(r["correct"]) for r in negatives), len(negatives))])
    return table


def verify_text(result: Mapping[str, Any], verifier: str) -> str:
    """The verdicts per language: accuracy, FNR and FPR with Wilson 95% intervals and their n."""
    from components.reports.comparison import aligned

    header = ["lang", "accuracy", "FNR (wrongly rejected)", "FPR (wrongly accepted)"]
    lines = [f"verifier {verifier}: accuracy = share of answers it accepts as the gold; FNR/FPR over the rows whose "
             "`expected` gives the right verdict; 95% Wilson interval and n", "",
             *aligned([header, *verify_rows_table(result["rows"])])]
    gap = (result.get("aggregate", {}).get("overall") or {}).get("fnr_gap")
    if gap is not None:
        lines.append(f"\nFNR gap between languages (largest - smallest): {gap:.3f}")
    return "\n".join(lines + error_lines(result.get("errors", [])))


def error_lines(errors: Sequence[Mapping[str, Any]], shown: int = 10) -> list[str]:
    """The skipped rows' problems (file:line: field: what is wrong), the first ``shown`` of them."""
    if not errors:
        return []
    more = [f"  ... {len(errors) - shown} more (--json lists all)"] if len(errors) > shown else []
    return ["", "errors (rows skipped):", *(f"  {error['message']}" for error in errors[:shown]), *more]
