"""File-level audit steps: what each Prefect task of ``tasks/audit.py`` calls, one function each.

Every step reads its inputs from paths, writes its outputs under an ``out_dir``
given by the caller, and returns a JSON-ready summary whose ``"metrics"`` are
the flat MLflow figures of ``components.audit.report`` (so a cached task still
reports). Generation rows are JSONL or parquet (``components.records``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from components.audit import report
from components.audit.diagnostics import Judgement, accuracy_by_language, diagnose, judge_rows
from components.audit.guard import check_reward_verifier
from components.audit.probe import interface_probe, number_only_prompt
from components.audit.selection import selection_report
from components.audit.stress import run_stress

MAX_REPORTED_ERRORS = 100  # in the returned summary; errors.json has them all


def read_rows(path: str | Path) -> tuple[list[dict], list[int], list[dict]]:
    """Rows of a JSONL or parquet file, their 1-based line/row numbers, and unreadable lines."""
    path = Path(path)
    if path.suffix == ".parquet":
        import pandas as pd

        rows = pd.read_parquet(path).to_dict(orient="records")
        return rows, list(range(1, len(rows) + 1)), []
    rows, lines, errors = [], [], []
    with path.open(encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                value = json.loads(text)
            except json.JSONDecodeError as error:
                errors.append({"line": number, "error": f"not valid JSON ({error.msg})"})
                continue
            if not isinstance(value, dict):
                errors.append({"line": number, "error": "not a JSON object"})
                continue
            rows.append(value)
            lines.append(number)
    return rows, lines, errors


def _write_jsonl(records: Iterable[Mapping], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
    return path


def _write_json(value: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
    return path


def read_judgements(path: str | Path) -> list[Judgement]:
    """Judgements written by ``judge_generations``."""
    with Path(path).open(encoding="utf-8") as handle:
        return [Judgement(**json.loads(line)) for line in handle if line.strip()]


def stress_step(out_dir: str | Path, *, verifiers: list[str], languages: list[str],
                golds: list[str] | None, table_path: str | None) -> dict:
    """Run the stress suite; writes ``stress.json`` (summary and every variant's verdicts)."""
    summary, records = run_stress(verifiers, languages, golds, table_path)
    _write_json({"summary": summary, "variants": records}, Path(out_dir) / "stress.json")
    return {"summary": summary, "variants": len(records), "metrics": report.stress_metrics(summary)}


def judge_generations(generations: str | Path, out_dir: str | Path, *, proxies: list[str], reference: str) -> dict:
    """Judge every row with the reference and the proxies; writes ``judgements.jsonl`` and ``errors.json``.

    Error entries carry the row's 1-based ``line`` in the file; such rows are in no figure.
    """
    rows, lines, errors = read_rows(generations)
    judgements, bad = judge_rows(rows, proxies, reference=reference)
    errors += [{**entry, "line": lines[entry["row"]]} for entry in bad]
    out = Path(out_dir)
    _write_jsonl((asdict(j) for j in judgements), out / "judgements.jsonl")
    _write_json(errors, out / "errors.json")
    return {
        "judgements": str(out / "judgements.jsonl"), "rows": len(rows) + sum("row" not in e for e in errors),
        "judged": len(judgements), "errors": errors[:MAX_REPORTED_ERRORS], "errors_file": str(out / "errors.json"),
        "languages": sorted({j.lang for j in judgements}), "metrics": {"audit/errors/rows": float(len(errors))},
    }


def diagnostics_step(judgements: str | Path, out_dir: str | Path, *, proxies: list[str]) -> dict:
    """Per-language FNR/FPR/Err and VLB of each proxy; writes ``diagnostics.json`` and ``fnr.png``."""
    items = read_judgements(judgements)
    diags = diagnose(items, proxies)
    accuracy = accuracy_by_language(items)
    records = report.language_table(diags)
    vlbs = {name: dict(diag.vlb) for name, diag in diags.items()}
    _write_json({"per_language": records, "vlb": vlbs, "accuracy": accuracy}, Path(out_dir) / "diagnostics.json")
    return {"table": records, "vlb": vlbs, "accuracy": accuracy,
            "metrics": report.diagnostics_metrics(diags, accuracy)}


def probe_step(standard: str | Path, number_only: str | Path, out_dir: str | Path, *, proxies: list[str]) -> dict:
    """Both answer interfaces side by side; writes ``probe.json``."""
    probe = interface_probe(read_judgements(standard), read_judgements(number_only), proxies)
    side_by_side = {key: probe[key] for key in ("accuracy", "accuracy_gap", "capability_gap", "verifiers")}
    _write_json(side_by_side, Path(out_dir) / "probe.json")
    return {**side_by_side, "metrics": report.probe_metrics(probe)}


def selection_step(judgements: str | Path, out_dir: str | Path) -> dict:
    """Local majority vs cross-lingual aggregation vs oracle; writes ``selection.json``."""
    figures = selection_report(read_judgements(judgements))
    _write_json(figures, Path(out_dir) / "selection.json")
    return {"report": figures, "metrics": report.selection_metrics(figures)}


def guard_step(generations: str | Path, *, verifier: str, metric: str, warn_vlb: float, fail_vlb: float,
               reference: str) -> dict:
    """The GRPO guard on these generations, reporting instead of raising."""
    rows, _, _ = read_rows(generations)
    result = check_reward_verifier(rows, verifier, warn_vlb=warn_vlb, fail_vlb=fail_vlb, metric=metric,
                                   reference=reference, raise_on_fail=False)
    return {"verifier": verifier, "metric": metric, "vlb": result.vlb, "status": result.status,
            "metrics": report.guard_metrics(verifier, metric, result.vlb, result.status)}


def figure_step(diagnostics: Mapping, stress: Mapping | None, selection: Mapping | None,
                out_dir: str | Path) -> dict:
    """The FNR bar chart (rollouts, and stress suite when given) and the per-language table."""
    panels = {"rollouts (FNR vs trusted)": _fnr_series(diagnostics["table"])}
    if stress:
        panels["stress suite (1 - accept_correct)"] = {
            name: {lang: None if f["accept_correct"] is None else 1 - f["accept_correct"] for lang, f in per.items()}
            for name, per in stress["summary"].items()
        }
    figure = report.plot_fnr(panels, Path(out_dir) / "fnr_by_language.png")
    table = report.merge_table(diagnostics["table"], stress["summary"] if stress else None,
                               selection["report"] if selection else None)
    return {"figure": str(figure), "table": table}


def _fnr_series(records: Iterable[Mapping]) -> dict[str, dict[str, float | None]]:
    series: dict[str, dict[str, float | None]] = {}
    for record in records:
        series.setdefault(record["verifier"], {})[record["lang"]] = record["fnr"]
    return series


def number_only_generations(generations: str | Path, out_path: str | Path, *, model, sampling,
                            cache_dir: str | Path) -> dict:
    """Generate the probe's rows: each (id, lang) prompt of ``generations`` rewritten number-only.

    Same model and sampling as the standard rows; resumable JSONL in the
    ``components.records`` row shape (``components.generation.resumable``).
    """
    from components.generation import build_generator
    from components.generation.resumable import generate_to_jsonl
    from components.records import BenchmarkItem

    rows, _, _ = read_rows(generations)
    firsts: dict[tuple[str, str], dict] = {}
    for row in rows:
        if row.get("lang") and row.get("prompt"):
            firsts.setdefault((str(row["id"]), row["lang"]), row)
    items = [BenchmarkItem(str(r["id"]), str(r.get("benchmark", "")), r["lang"], "", str(r.get("gold", "")), r.get("source"))
             for r in firsts.values()]
    prompts = [number_only_prompt(row["prompt"], row["lang"]) for row in firsts.values()]
    generator = build_generator(model, Path(cache_dir))
    return generate_to_jsonl(generator, items, prompts, sampling, Path(out_path)).to_dict()


def concat_generations(paths: list[str], out_path: str | Path) -> dict:
    """Several generation files (one per benchmark; ids are benchmark-prefixed) as one JSONL."""
    rows = [row for path in paths for row in read_rows(path)[0]]
    return {"path": str(_write_jsonl(rows, Path(out_path))), "rows": len(rows), "files": len(paths)}
