"""What a training stage reports: metric names for MLflow and the GRPO curriculum plot (PCS figure 4).

``metrics.jsonl`` (written by ``MetricsJsonlCallback``) holds trl's own metrics
(``loss``, ``learning_rate``, ``grad_norm``; for GRPO also ``kl``, ``entropy``,
``reward``, ``completions/mean_length``, ``rewards/<reward>/mean`` …) and ours
(``reward/*`` components, ``curriculum/*``, ``language/*``). MLflow keys follow
``<stage>/<group>/<name>``: a key that already has a group keeps it
(``curriculum/tau`` -> ``grpo/curriculum/tau``), a bare trl key goes to ``train``
(``kl`` -> ``grpo/train/kl``, ``loss`` -> ``grpo/train/loss``), except the stage's headline
(``HEADLINE``: GRPO's reward, SFT's loss), which has no group (``grpo/reward``, ``sft/loss``):
MLflow 3's chart pages group a run's charts into sections named by the key without its last
part and list them alphabetically, so ``grpo`` comes before ``grpo/clip_ratio`` and every other
group, and the page opens on the reward rather than on trl's clipping ratios.

>>> mlflow_key("curriculum/tau"), mlflow_key("kl"), mlflow_key("rewards/pcs/mean"), mlflow_key("reward")
('grpo/curriculum/tau', 'grpo/train/kl', 'grpo/rewards/pcs/mean', 'grpo/reward')
>>> mlflow_key("loss", "sft"), mlflow_key("loss")
('sft/loss', 'grpo/train/loss')
>>> metric_series([{"step": 1, "kl": 0.5, "note": "x"}])
[{'step': 1, 'grpo/train/kl': 0.5}]
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

PLOTTED = {  # metrics.jsonl key -> label; PCS fig. 4 shows τ, SLC and accuracy over steps
    "curriculum/tau": "τ (SLC threshold)",
    "language/slc_mean": "SLC(T, L)",
    "curriculum/phi": "φ(t)",
    "language/query_match": "query-language match",
    "reward/accuracy": "accuracy",
}


HEADLINE = {"grpo": "reward", "sft": "loss"}  # stage -> the trl key its chart page opens on


def mlflow_key(key: str, stage: str = "grpo") -> str:
    """``<stage>/<group>/<name>`` for a metrics.jsonl key (the stage's headline: ``<stage>/<name>``); characters
    MLflow refuses become ``_``."""
    clean = re.sub(r"[^\w\-./ ]", "_", key)
    return f"{stage}/{clean}" if "/" in clean or HEADLINE.get(stage) == clean else f"{stage}/train/{clean}"


def metric_series(records: list[dict[str, Any]], stage: str = "grpo") -> list[dict[str, Any]]:
    """Rows ``{"step": N, "<stage>/...": value}`` with numeric values only."""
    return [{"step": int(r.get("step", 0)),
             **{mlflow_key(k, stage): float(v) for k, v in r.items()
                if k != "step" and isinstance(v, (int, float)) and not isinstance(v, bool)}}
            for r in records]


def final_values(records: list[dict[str, Any]]) -> dict[str, float]:
    """The last value of every plotted curriculum/language metric (for the stage summary)."""
    out: dict[str, float] = {}
    for record in records:
        out.update({k: float(v) for k, v in record.items() if k.startswith(("curriculum/", "language/"))})
    return out


def plot_curriculum(records: list[dict[str, Any]], path: str | Path, title: str = "GRPO curriculum") -> Path | None:
    """PNG of the plotted metrics over steps (one shared 0–1 axis); ``None`` when none was logged."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    from matplotlib.ticker import MaxNLocator

    curves = {label: [(r["step"], r[key]) for r in records if isinstance(r.get(key), (int, float))]
              for key, label in PLOTTED.items()}
    curves = {label: points for label, points in curves.items() if points}
    if not curves:
        return None
    figure, axis = plt.subplots(figsize=(6, 3.5))
    for label, points in curves.items():
        axis.plot([p[0] for p in points], [p[1] for p in points], marker=".", label=label)
    axis.set_xlabel("optimizer step")
    axis.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole: no tick at 1.2
    axis.set_ylim(-0.05, 1.15)
    axis.set_title(title)
    axis.legend(loc="best", fontsize=8)
    figure.tight_layout()
    path = Path(path)
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path
