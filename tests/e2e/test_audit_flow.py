"""End-to-end: the audit flow through a real Prefect server, MLflow in a temporary SQLite store.

1. On a hand-written generations artifact (known verdicts): the exact figures land in MLflow,
   bad-language rows are reported by line, and a second (cached) run still reports.
2. On fresh generations of the tiny from-config model on offline MGSM in en/ja/zh
   (the evaluation flow, then number-only generations for the probe): every family of
   figures exists in MLflow. Random weights: mechanics, not content.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

LANGS = ("en", "ja", "zh")
PROXIES = ["exact", "numeric", "math_verify", "hybrid"]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _metrics(uri: str, run_id: str) -> dict[str, float]:
    from mlflow import MlflowClient

    return MlflowClient(uri).get_run(run_id).data.metrics


def _artifacts(uri: str, run_id: str, folder: str) -> set[str]:
    from mlflow import MlflowClient

    return {a.path for a in MlflowClient(uri).list_artifacts(run_id, folder)}


# Problem m-1 (gold 1234) and m-2 (gold 18), two samples each per language.
STANDARD = {
    "en": ["\\boxed{1234}", "The answer is 1234.", "\\boxed{17}", "\\boxed{18}"],
    "ja": ["答えは1,234円です。", "\\boxed{1234}", "\\boxed{１８}", "答えは18個です。"],
    "zh": ["答案是1234元。", "\\boxed{1235}", "\\boxed{18}", "\\boxed{18}"],
}
NUMBER_ONLY = {lang: ["\\boxed{1234}", "\\boxed{1234}", "\\boxed{18}", "\\boxed{17}"] for lang in LANGS}


def _rows(samples: dict[str, list[str]]) -> list[dict]:
    rows = []
    for lang, texts in samples.items():
        for index, text in enumerate(texts):
            problem, gold = ("m-1", "1234") if index < 2 else ("m-2", "18")
            rows.append({"id": problem, "benchmark": "mgsm", "lang": lang, "gold": gold, "prompt": "P",
                         "completion": text, "sample_index": index % 2, "num_tokens": 4})
    return rows


def test_audit_flow_on_a_written_artifact(tmp_path, prefect_server):
    from components.config import load_profile_dict
    from flows.commands import run_audit

    rows = _rows(STANDARD) + [{"id": "m-9", "lang": None, "gold": "3", "completion": "\\boxed{3}"}]
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    profile = load_profile_dict({
        "name": "written-audit", "project_dir": str(tmp_path),
        "tracking": {"tracking_uri": uri, "artifact_root": (tmp_path / "artifacts-mlflow").as_uri()},
        "audit": {"generations": str(_write(tmp_path / "standard.jsonl", rows)),
                  "number_only_generations": str(_write(tmp_path / "number_only.jsonl", _rows(NUMBER_ONLY))),
                  "stress_golds": ["18", "70000"], "guard_verifier": "exact", "warn_vlb": 0.1, "fail_vlb": 0.5},
    })
    result = run_audit(profile)
    assert [(e["line"], e["error"]) for e in result["errors"]] == [(13, "missing language")]

    metrics = _metrics(uri, result["run_id"])
    # exact vs trusted, by hand: en trusted-correct 3 (FN 0); ja 4 correct, exact accepts only \boxed{1234}
    # (FN 3); zh 3 correct, exact rejects 1234元 (FN 1)
    assert metrics["audit/exact/en/fnr"] == 0.0
    assert metrics["audit/exact/ja/fnr"] == 0.75
    assert metrics["audit/exact/zh/fnr"] == pytest.approx(1 / 3)
    assert metrics["audit/exact/vlb_fnr"] == 0.75
    assert metrics["audit/exact/ja/err"] == 0.75 and metrics["audit/exact/ja/pressure"] == -0.75
    assert metrics["audit/trusted/en/accuracy"] == 0.75 and metrics["audit/trusted/ja/accuracy"] == 1.0
    assert metrics["audit/trusted/zh/accuracy"] == 0.75
    for proxy in ("numeric", "hybrid"):
        assert metrics[f"audit/{proxy}/vlb_err"] == 0.0
    # number-only interface: the exact VLB vanishes, the accuracy gap does not
    assert metrics["audit/number_only/exact/vlb_fnr"] == 0.0
    assert metrics["audit/probe/exact/format_effect_fnr"] == 0.75
    assert metrics["audit/probe/accuracy_gap_number_only"] == 0.0
    assert metrics["audit/probe/accuracy_gap_standard"] == 0.25
    # selection: zh m-1 ties 1234/1235 locally (first sample wins: 1234), every language has oracle 1
    assert metrics["audit/selection/zh/local_majority"] == 1.0
    # en m-2: 17 and 18 tie locally, 17 came first (wrong); 18 has support in ja and zh: a repair
    # that needed no cross-lingual majority (the local clusters tie)
    assert metrics["audit/selection/en/local_majority"] == 0.5
    assert metrics["audit/selection/en/aggregated"] == 1.0
    assert metrics["audit/selection/en/gap_recovered"] == 1.0
    assert (metrics["audit/selection/en/repairs"], metrics["audit/selection/en/repairs_cross_lingual"]) == (1, 0)
    assert metrics["audit/selection/mean/oracle"] == 1.0
    assert metrics["audit/stress/trusted/th/reject_wrong"] == 1.0
    assert metrics["audit/guard/status"] == 2.0 and result["guard"]["status"] == "fail"
    assert _artifacts(uri, result["run_id"], "audit") >= {"audit/fnr_by_language.png", "audit/per_language.json"}
    assert {"stress.json", "diagnostics.json", "probe.json", "selection.json"} == {
        Path(p).name for p in _artifacts(uri, result["run_id"], "audit/outputs")}

    again = run_audit(profile)  # cached steps still report
    assert again["run_id"] != result["run_id"]
    assert _metrics(uri, again["run_id"]) == metrics


def test_audit_flow_on_tiny_model_generations(tiny_model_dir, shared_data, tmp_path, prefect_server):
    from components.audit.probe import NUMBER_ONLY_INSTRUCTIONS
    from components.config import load_profile_dict
    from flows.commands import run_audit

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    profile = load_profile_dict({
        "name": "tiny-audit", "project_dir": str(tmp_path),
        "tracking": {"tracking_uri": uri, "experiment": "e2e-audit"},
        "evaluation": {
            "model": {"backend": "transformers", "model": str(tiny_model_dir), "dtype": "float32", "chat": True},
            "sampling": {"n": 2, "temperature": 0.8, "top_p": 0.95, "max_new_tokens": 8, "batch_size": 6, "seed": 3},
            "prompt": {"style": "instruction"},
            "benchmarks": [{"name": "mgsm", "data_dir": str(shared_data / "mgsm"), "languages": list(LANGS),
                            "limit": 2}],
        },
        "audit": {"stress_golds": ["18", "70000"]},
    })
    result = run_audit(profile)

    generations = Path(result["generations"]).read_text(encoding="utf-8").splitlines()
    number_only = [json.loads(line) for line in Path(result["number_only_generations"]).read_text().splitlines()]
    assert len(generations) == len(number_only) == len(LANGS) * 2 * 2  # languages x problems x samples
    assert all(NUMBER_ONLY_INSTRUCTIONS[row["lang"]] in row["prompt"] for row in number_only)
    assert result["errors"] == []

    metrics = _metrics(uri, result["run_id"])
    for lang in LANGS:
        assert f"audit/trusted/{lang}/accuracy" in metrics
        assert f"audit/number_only/trusted/{lang}/accuracy" in metrics
        for proxy in PROXIES:
            assert f"audit/{proxy}/{lang}/err" in metrics, (proxy, lang)
            assert f"audit/{proxy}/{lang}/pressure" in metrics
        for figure in ("local_majority", "aggregated", "oracle", "repairs", "repairs_cross_lingual"):
            assert f"audit/selection/{lang}/{figure}" in metrics
    for proxy in PROXIES:
        assert f"audit/{proxy}/vlb_err" in metrics
        for lang in ("en", "ja", "zh", "fr", "de", "th"):
            assert f"audit/stress/{proxy}/{lang}/accept_correct" in metrics
            assert f"audit/stress/{proxy}/{lang}/reject_wrong" in metrics
    assert "audit/guard/status" in metrics and "audit/probe/accuracy_gap_number_only" in metrics
    assert not any("@" in key or "&" in key for key in metrics)
    assert _artifacts(uri, result["run_id"], "audit") >= {"audit/fnr_by_language.png", "audit/per_language.json"}
