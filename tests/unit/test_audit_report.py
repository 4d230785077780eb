"""Audit figures: MLflow metric names, the steps' files, the chart, and the profile section."""

from __future__ import annotations

import doctest
import importlib
import json

import pytest

from components.audit import pipeline, report
from components.audit.diagnostics import Judgement, diagnose
from components.config import load_profile_dict
from components.settings import ProfileError


def test_metric_names_follow_the_scheme():
    items = [Judgement(0, "p", "ja", True, {"exact": False}), Judgement(1, "p", "en", True, {"exact": True})]
    diags = diagnose(items, ["exact"])
    metrics = report.diagnostics_metrics(diags, {"ja": 1.0, "en": 1.0})
    assert metrics == {
        "audit/exact/en/fnr": 0.0, "audit/exact/en/err": 0.0, "audit/exact/en/pressure": -0.0,
        "audit/exact/ja/fnr": 1.0, "audit/exact/ja/err": 1.0, "audit/exact/ja/pressure": -1.0,
        "audit/exact/vlb_fnr": 1.0, "audit/exact/vlb_err": 1.0,  # fpr undefined (no negatives): absent
        "audit/trusted/ja/accuracy": 1.0, "audit/trusted/en/accuracy": 1.0, "audit/trusted/accuracy_gap": 0.0,
    }
    assert report.stress_metrics({"exact": {"th": {"accept_correct": 0.25, "reject_wrong": 1.0}}}) == {
        "audit/stress/exact/th/accept_correct": 0.25, "audit/stress/exact/th/reject_wrong": 1.0}
    assert report.selection_metrics({"mean": {"oracle": 0.5, "gap_recovered": None}}) == {
        "audit/selection/mean/oracle": 0.5}
    assert report.guard_metrics("exact", "err", 0.4, "warn") == {"audit/guard/status": 1.0,
                                                                   "audit/guard/exact/vlb_err": 0.4}


def test_steps_write_their_files_and_report_bad_rows_by_line(tmp_path):
    rows = [
        {"id": "mgsm-1", "lang": "en", "gold": "18", "completion": "\\boxed{18}", "sample_index": 0},
        {"id": "mgsm-1", "lang": "ja", "gold": "18", "completion": "答えは18円です。", "sample_index": 0},
        {"id": "mgsm-1", "lang": "tlh", "gold": "18", "completion": "\\boxed{18}", "sample_index": 0},
    ]
    path = tmp_path / "generations.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n{broken\n", encoding="utf-8")
    judged = pipeline.judge_generations(path, tmp_path / "j", proxies=["exact"], reference="trusted")
    assert (judged["judged"], judged["rows"]) == (2, 4)
    assert [(e["line"], e["error"]) for e in judged["errors"]] == [
        (4, "not valid JSON (Expecting property name enclosed in double quotes)"),
        (3, "unknown language 'tlh'"),
    ]
    diagnostics = pipeline.diagnostics_step(judged["judgements"], tmp_path / "d", proxies=["exact"])
    assert diagnostics["metrics"]["audit/exact/ja/fnr"] == 1.0
    assert diagnostics["metrics"]["audit/exact/vlb_fnr"] == 1.0
    selection = pipeline.selection_step(judged["judgements"], tmp_path / "s")
    assert selection["report"]["ja"]["oracle"] == 1.0
    figure = pipeline.figure_step(diagnostics, None, selection, tmp_path / "f")
    assert (tmp_path / "f" / "fnr_by_language.png").stat().st_size > 1000
    assert {(r["verifier"], r["lang"], r["fnr"], r["selection_oracle"]) for r in figure["table"]} == {
        ("exact", "en", 0.0, 1.0), ("exact", "ja", 1.0, 1.0)}
    for name in ("judgements.jsonl", "errors.json"):
        assert (tmp_path / "j" / name).exists()


def _audit_profile(**audit) -> dict:
    return {"name": "t", "audit": {"generations": "g.jsonl", **audit}}


def test_profile_section_rejects_unknown_keys_and_disordered_thresholds():
    assert load_profile_dict(_audit_profile()).audit.proxies == ["exact", "numeric", "math_verify", "hybrid"]
    with pytest.raises(ProfileError, match="audit.proxy"):
        load_profile_dict(_audit_profile(proxy=["exact"]))
    with pytest.raises(ProfileError, match="must not exceed"):
        load_profile_dict(_audit_profile(warn_vlb=0.5, fail_vlb=0.2))


def test_registry_check_reports_every_unknown_name_at_once():
    with pytest.raises(ProfileError) as error:
        load_profile_dict(_audit_profile(proxies=["exact", "fuzzy"], guard_verifier="strict",
                                         stress_languages=["en", "xx"]))
    message = str(error.value)
    assert "3 invalid setting(s)" in message
    assert "audit.proxies.1: unknown verifier 'fuzzy'" in message
    assert "audit.guard_verifier: unknown verifier 'strict'" in message
    assert "audit.stress_languages.1: unknown stress-table language 'xx'" in message


def test_registry_check_needs_a_source_of_generations_and_a_rewritable_prompt():
    with pytest.raises(ProfileError, match="audit.generations: unset"):
        load_profile_dict({"name": "t", "audit": {}})
    few_shot = {"name": "t", "audit": {}, "evaluation": {"prompt": {"style": "few_shot", "num_shots": 1,
                                                                   "exemplars_path": "x.json"}}}
    with pytest.raises(ProfileError, match="audit.probe: the number-only probe"):
        load_profile_dict(few_shot)
    load_profile_dict(few_shot, ["audit.probe=false"])


@pytest.mark.parametrize("module", ["diagnostics", "selection", "guard", "stress", "probe", "report"])
def test_docstring_examples(module):
    assert doctest.testmod(importlib.import_module(f"components.audit.{module}")).failed == 0


def test_shipped_audit_profile_loads():
    from pathlib import Path

    from components.config import load_profile

    profile = load_profile(Path(__file__).resolve().parents[2] / "profiles" / "cpu-audit.yaml")
    assert profile.audit.guard_verifier == "exact" and profile.evaluation.prompt.style == "instruction"


def test_the_stress_table_is_extended_by_a_file_relative_to_the_project(tmp_path):
    from components.audit.stress import run_stress

    (tmp_path / "table.yaml").write_text(
        'languages:\n  ko:\n    frames: [{name: sentence, text: "정답은 {answer}입니다."}]\n'
        '    forms: [{name: won, text: "{n}원"}, {name: plain, text: "{n}"}]\n', encoding="utf-8")
    profile = load_profile_dict({**_audit_profile(stress_table="table.yaml", stress_languages=["ko"]),
                                 "project_dir": str(tmp_path)})
    summary, records = run_stress(["trusted"], ["ko"], ["18"], tmp_path / profile.audit.stress_table)
    assert [r["text"] for r in records] == ["정답은 18원입니다.", "정답은 18입니다.", "정답은 19원입니다.", "정답은 19입니다."]
    assert summary["trusted"]["ko"] == {"correct": 2, "wrong": 2, "accept_correct": 1.0, "reject_wrong": 1.0}
