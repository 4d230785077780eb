"""Audit figures as flat MLflow metrics, per-language table records and an FNR bar chart.

Metric names follow the house scheme (``audit/...``, no ``@``/``&``):

* rollout diagnostics: ``audit/<verifier>/<lang>/fnr|fpr|err|pressure``,
  ``audit/<verifier>/vlb_fnr|vlb_fpr|vlb_err``, ``audit/trusted/<lang>/accuracy``;
* answer-interface probe: the same under ``audit/number_only/...``, plus
  ``audit/probe/<verifier>/format_effect_<rate>`` and
  ``audit/probe/accuracy_gap_standard|accuracy_gap_number_only``;
* selection: ``audit/selection/<lang>/<figure>`` (``<lang>`` may be ``mean``);
* stress suite: ``audit/stress/<verifier>/<lang>/accept_correct|reject_wrong``;
* guard: ``audit/guard/<verifier>/vlb_<metric>`` and ``audit/guard/status`` (0 ok, 1 warn, 2 fail).

Undefined figures (``None``) are left out: MLflow metrics are floats.

>>> diagnostics_metrics({}, {"en": 1.0, "ja": 0.5})
{'audit/trusted/en/accuracy': 1.0, 'audit/trusted/ja/accuracy': 0.5, 'audit/trusted/accuracy_gap': 0.5}
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from components.audit.diagnostics import RATE_NAMES, VerifierDiagnostics, vlb

GUARD_CODES = {"ok": 0.0, "warn": 1.0, "fail": 2.0}


def _put(out: dict[str, float], key: str, value) -> None:
    if value is not None:
        out[key] = float(value)


def diagnostics_metrics(
    diagnostics: Mapping[str, VerifierDiagnostics], accuracy: Mapping[str, float], prefix: str = "audit"
) -> dict[str, float]:
    """Per-language rates, pressure, VLB of every proxy, and trusted accuracy (gap)."""
    out: dict[str, float] = {}
    for name, diag in diagnostics.items():
        for lang, rates in diag.per_lang.items():
            for rate in RATE_NAMES:
                _put(out, f"{prefix}/{name}/{lang}/{rate}", getattr(rates, rate))
            _put(out, f"{prefix}/{name}/{lang}/pressure", rates.pressure)
        for rate in RATE_NAMES:
            _put(out, f"{prefix}/{name}/vlb_{rate}", diag.vlb[rate])
    for lang, value in accuracy.items():
        _put(out, f"{prefix}/trusted/{lang}/accuracy", value)
    _put(out, f"{prefix}/trusted/accuracy_gap", vlb(accuracy))
    return out


def probe_metrics(probe: Mapping) -> dict[str, float]:
    """Number-only interface figures and the side-by-side comparison."""
    out = diagnostics_metrics(probe["diagnostics"]["number_only"], probe["accuracy"]["number_only"],
                              prefix="audit/number_only")
    for name, sides in probe["verifiers"].items():
        for rate, value in sides["format_effect"].items():
            _put(out, f"audit/probe/{name}/format_effect_{rate}", value)
    for interface, gap in probe["accuracy_gap"].items():
        _put(out, f"audit/probe/accuracy_gap_{interface}", gap)
    return out


def selection_metrics(selection: Mapping[str, Mapping]) -> dict[str, float]:
    """``audit/selection/<lang>/<figure>`` for every figure of the selection report."""
    out: dict[str, float] = {}
    for lang, figures in selection.items():
        for key, value in figures.items():
            _put(out, f"audit/selection/{lang}/{key}", value)
    return out


def stress_metrics(summary: Mapping[str, Mapping[str, Mapping]]) -> dict[str, float]:
    """``audit/stress/<verifier>/<lang>/accept_correct|reject_wrong``."""
    out: dict[str, float] = {}
    for name, per_lang in summary.items():
        for lang, figures in per_lang.items():
            for key in ("accept_correct", "reject_wrong"):
                _put(out, f"audit/stress/{name}/{lang}/{key}", figures.get(key))
    return out


def guard_metrics(verifier: str, metric: str, value: float | None, status: str) -> dict[str, float]:
    """The guard's VLB and its status code."""
    out = {"audit/guard/status": GUARD_CODES[status]}
    _put(out, f"audit/guard/{verifier}/vlb_{metric}", value)
    return out


def language_table(diagnostics: Mapping[str, VerifierDiagnostics]) -> list[dict]:
    """One record per (verifier, language) with the rollout rates."""
    records = []
    for name, diag in diagnostics.items():
        for lang, r in diag.per_lang.items():
            records.append({
                "verifier": name, "lang": lang, "n": r.n, "trusted_accuracy": r.reference_accuracy,
                "proxy_accuracy": r.proxy_accuracy, "fnr": r.fnr, "fpr": r.fpr, "err": r.err, "pressure": r.pressure,
            })
    return records


def merge_table(
    records: list[Mapping],
    stress: Mapping[str, Mapping[str, Mapping]] | None = None,
    selection: Mapping[str, Mapping] | None = None,
) -> list[dict]:
    """The rollout records with the stress-suite shares and selection figures of their language.

    >>> merge_table([{"verifier": "exact", "lang": "ja", "fnr": 0.5}],
    ...             {"exact": {"ja": {"accept_correct": 0.2, "reject_wrong": 1.0}}},
    ...             {"ja": {"local_majority": 0.5, "aggregated": 0.75, "oracle": 1.0}})[0]["stress_accept_correct"]
    0.2
    """
    stress = stress or {}
    selection = selection or {}
    out = []
    for record in records:
        shares = stress.get(record["verifier"], {}).get(record["lang"], {})
        sel = selection.get(record["lang"], {})
        out.append({
            **record,
            "stress_accept_correct": shares.get("accept_correct"), "stress_reject_wrong": shares.get("reject_wrong"),
            "selection_local_majority": sel.get("local_majority"), "selection_aggregated": sel.get("aggregated"),
            "selection_oracle": sel.get("oracle"),
        })
    return out


def plot_fnr(panels: Mapping[str, Mapping[str, Mapping[str, float | None]]], path: str | Path) -> Path:
    """Grouped bar chart(s) of FNR per language (x) and verifier (bars); one panel per title.

    ``panels``: ``{title: {verifier: {lang: fnr or None}}}``; undefined values draw no bar.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    fig, axes = plt.subplots(1, max(len(panels), 1), figsize=(6 * max(len(panels), 1), 4), squeeze=False)
    for ax, (title, series) in zip(axes[0], panels.items()):
        langs = sorted({lang for values in series.values() for lang in values})
        width = 0.8 / max(len(series), 1)
        for i, (name, values) in enumerate(sorted(series.items())):
            xs = [j + i * width for j, lang in enumerate(langs) if values.get(lang) is not None]
            ys = [values[lang] for lang in langs if values.get(lang) is not None]
            ax.bar(xs, ys, width=width, label=name)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(langs))], langs)
        ax.set_ylim(0, 1)
        ax.set_ylabel("false-negative rate vs trusted")
        ax.set_title(title)
        ax.legend(fontsize="small")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
