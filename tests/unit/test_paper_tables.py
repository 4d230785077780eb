"""The papers' headline numbers as data: every GPU paper profile has its table file, the file fits the profile
(its overrides load, its benchmarks, languages and metrics are the profile's), and its values are the papers'.

The values are pinned against the papers' texts in ``../shared/seeds`` (beside the repository): a hand-written
sample of cells (the value as read by eye, and the seed line it was read from), then every value of the PCS and
AdaMame tables against the cells of the seed line of its row. Without the seeds those checks are skipped.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from components.config import load_profile
from components.paper_tables import load_table, parse_table, table_path

REPO = Path(__file__).resolve().parents[2]
PROFILES = REPO / "profiles"
SEEDS = REPO.parent / "shared" / "seeds"
GPU_PROFILES = sorted(path for path in PROFILES.glob("*.yaml") if not path.name.startswith("cpu-"))


def seed_text(name: str) -> str:
    if not (SEEDS / name).is_file():
        pytest.skip(f"the papers' texts are not beside the repository ({SEEDS / name} is missing)")
    return (SEEDS / name).read_text(encoding="utf-8")


@pytest.mark.parametrize("path", GPU_PROFILES, ids=lambda p: p.stem)
def test_every_gpu_paper_profile_has_its_table_file_and_it_loads(path):
    import yaml

    rows = load_table(table_path(path))
    data = yaml.safe_load(table_path(path).read_text(encoding="utf-8"))
    assert data["profile"] == path.stem and data["source"] in SEED_OF.values() and data["paper"]
    assert rows or "no row" in data["note"]  # an empty file says why


def _stage(profile, measured_by: str):
    return {"base": profile.sft or profile.grpo, "sft": profile.sft, "grpo": profile.grpo,
            "evaluation": profile.evaluation if profile.sft is None else None, "audit": profile.audit}[measured_by]


@pytest.mark.parametrize("path", GPU_PROFILES, ids=lambda p: p.stem)
def test_table_rows_fit_their_profile(path):
    """Each row's run exists: its overrides load, its stage is in the profile, its benchmark and languages are."""
    rows = load_table(table_path(path))
    for overrides in sorted({row.overrides for row in rows}):
        profile = load_profile(path, list(overrides))
        for row in (r for r in rows if r.overrides == overrides):
            assert _stage(profile, row.measured_by) is not None, (row.row, row.measured_by)
            if row.measured_by == "audit" or profile.evaluation is None:
                continue  # the audit's rollouts are the evaluation's; QA rows: the trained model's test sets
            benchmarks = {b.name: b for b in profile.evaluation.benchmarks}
            assert row.benchmark in benchmarks, (row.row, row.benchmark)
            assert row.language in ("all", "in_domain", "out_of_domain", "low", "mid", "high") or \
                row.language in benchmarks[row.benchmark].languages, (row.row, row.language)
            if row.metric.startswith("pass_at_"):
                assert int(row.metric.removeprefix("pass_at_")) in profile.evaluation.scoring.pass_k


# (file, table, row label, benchmark, metric, language) -> (value read by eye, the seed text it was read from)
SAMPLE = {
    ("qwen3-8b-pcs-grpo", "Table 2", "PCS", "mmath", "slc_and_acc", "fr"):
        (41.2, "| **PCS** | **41.2** | **42.6** | **98.0** |"),
    ("qwen3-8b-pcs-grpo", "Table 2", "PCS", "mmlu_prox_math", "slc", "th"):
        (99.5, "**75.2** | **75.9** | **99.5** | **77.1** | **85.4** |"),
    ("qwen3-8b-pcs-grpo", "Table 2", "SFT", "mmath", "accuracy", "ja"):
        (9.8, "| SFT | 14.1 | 32.2 | 83.1 | 12.8 | 34.3 | 70.5 | 9.8 | 9.8 | 99.0 |"),
    ("qwen3-8b-pcs-evaluation", "Table 2", "Prompt Control", "mmath", "slc_and_acc", "all"):
        (0.6, "| 2.7 | 21.8 | 17.8 | 0.6 | 25.8 |"),
    ("qwen3-8b-mthinker-grpo", "Table 2", "M-Thinker", "mmlu_prox_math", "accuracy", "pt"):
        (80.3, "| M-Thinker | 58.4 | 79.6 | 92.6 | 53.7 | 80.3 | 91.3 |"),
    ("qwen3-4b-adamame-grpo", "Table 16", "+AdaMame-GRPO", "mgsm_rev2", "pass_at_4", "fr"):
        (96.0, "+AdaMame-GRPO\t35K\tAcc.\t96.0\t90.0\t84.8\t90.8"),
    ("qwen3-4b-adamame-grpo", "Table 17", "SFT", "msvamp", "lcpr", "ru"):
        (2.3, "SFT\t30K\tLCPR\t94.2\t88.8\t92.6\t97.3\t97.0\t92.0\t95.4\t2.3\t91.8\t91.6\t84.3"),
    ("qwen3-4b-adamame-grpo", "Table 2", "+AdaMame-GRPO", "msvamp", "lcpr", "all"):
        (86.0, "+AdaMame-GRPO\t35K\t90.4\t83.6\t85.9\t88.4\t89.4\t89.0\t88.9\t90.5\t89.9\t94.2\t80.4\t86.0"),
    ("qwen3-4b-adamame-evaluation", "Table 3", "Vanilla", "mgsm_rev2", "ttc", "low"):
        (21.6, "Vanilla\t-\t74.1\t79.5\t82.4\t64.9\t64.5\t70.3\t4.1\t23.5\t42.7\t0.6\t30.7\t46.4\t21.6"),
    ("distill-qwen-1.5b-adamame-grpo", "Table 16", "+GRPO", "mgsm_rev2", "lcpr", "bn"):
        (29.2, "+GRPO\t35K\tLCPR\t88.6\t68.4\t78.6\t84.8\t29.2"),
    ("distill-qwen-1.5b-adamame-evaluation", "Table 17", "Prompt", "msvamp", "ttc", "zh"):
        (2.3, "Prompt\t-\tTTC\t3.8\t8.7\t19.6\t8.0\t3.0\t3.3\t16.8\t5.6\t2.3\t3.8\t7.5"),
    ("qwen2.5-3b-lcrl-mkqa", "Main results", "LcRL", "mkqa", "clr", "all"): (99.1, "MKQA\tCLR\t99.1\t95.6"),
    ("qwen2.5-3b-lcrl-mkqa", "Ablations", "w/o Lc Rollout", "mkqa", "c3recall", "all"):
        (45.7, "w/o Lc Rollout\t30.4\t45.7"),
    ("qwen3-8b-verifier-bias-evaluation", "Abstract and section 5", "Qwen3-8B", "mgsm", "fnr", "ja"):
        (0.642, "日语的假负率达到0.642"),
    ("qwen3-8b-verifier-bias-evaluation", "Abstract and section 5", "Qwen3-8B", "mgsm", "vlb_fnr", "all"):
        (0.569, "验证器语言偏差（VLB）达到0.569"),
}
SEED_OF = {"pcs": "000_cc53a9cef5011c63.txt", "mthinker": "000_cc53a9cef5011c63.txt",
           "adamame": "004_786c9c99d381df82.txt", "lcrl": "003_a48c0393b6638961.txt",
           "verifier-bias": "001_bb3f89d5701a40cd.txt"}


def _seed_of(name: str) -> str:
    return next(seed for key, seed in SEED_OF.items() if key in name)


@pytest.mark.parametrize("cell", sorted(SAMPLE), ids=lambda c: f"{c[0]}:{c[2]}:{c[3]}:{c[4]}:{c[5]}")
def test_sampled_values_are_the_papers(cell):
    name, table, label, benchmark, metric, language = cell
    expected, snippet = SAMPLE[cell]
    (row,) = [r for r in load_table(PROFILES / "papers" / f"{name}.yaml")
              if (r.table, r.row, r.benchmark, r.metric, r.language) == (table, label, benchmark, metric, language)]
    assert row.value == expected
    assert snippet in seed_text(_seed_of(name))


def _cells(line: str) -> list[str]:
    return [cell.strip().strip("*") for cell in re.split(r"\t|\|", line)]


@pytest.mark.parametrize("name", ["qwen3-8b-pcs-evaluation", "qwen3-8b-pcs-grpo", "qwen3-8b-mthinker-grpo",
                                  "qwen3-4b-adamame-evaluation", "qwen3-4b-adamame-grpo",
                                  "distill-qwen-1.5b-adamame-evaluation", "distill-qwen-1.5b-adamame-grpo"])
def test_every_value_is_printed_on_its_rows_line_of_the_paper(name):
    """Each value is a cell of a seed line whose label cell is the row's (a typo cannot pass)."""
    lines = [_cells(line) for line in seed_text(_seed_of(name)).splitlines()]
    for row in load_table(PROFILES / "papers" / f"{name}.yaml"):
        printed = {f"{row.value:.1f}", f"{row.value:.2f}", f"{row.value:g}"}
        assert any(row.row in cells and printed & set(cells) for cells in lines), (row.row, row.metric, row.language)


@pytest.mark.parametrize("entry, message", [
    ({"table": "T", "row": "r", "model": "m", "measured_by": "grpo", "benchmark": "mgsm", "metric": "accuracy"},
     "rows.0: field 'values': missing"),
    ({"table": "T", "row": "r", "model": "m", "measured_by": "training", "benchmark": "mgsm", "metric": "accuracy",
      "values": {"fr": 1.0}}, "rows.0: field 'measured_by': 'training'"),
    ({"table": "T", "row": "r", "model": "m", "measured_by": "grpo", "benchmark": "mgsm", "metric": "acc@4",
      "values": {"fr": 1.0}}, "rows.0: field 'metric': 'acc@4' is not a metric the grpo reports"),
    ({"table": "T", "row": "r", "model": "m", "measured_by": "audit", "benchmark": "mgsm", "metric": "fnr",
      "values": {"ja": 0.6}}, "rows.0: field 'verifier': audit rows name the audited verifier"),
    ({"table": "T", "row": "r", "model": "m", "measured_by": "sft", "benchmark": "mgsm", "metric": "lcpr",
      "values": {"French": 90.0, "fr": "90"}}, "'French' is neither a language code nor a group"),
    ({"table": "T", "row": "r", "model": "m", "measured_by": "sft", "benchmark": "mgsm", "metric": "lcpr",
      "values": {"fr": "90"}, "split": "test"}, "rows.0: field 'split': unknown"),
])
def test_a_bad_table_file_is_refused_naming_file_row_and_field(entry, message):
    with pytest.raises(ValueError) as error:
        parse_table({"scale": 100, "rows": [entry]}, "papers/x.yaml")
    assert message in str(error.value)
    assert str(error.value).startswith("papers/x.yaml: rows.0: field")  # the file, the row, the field


def test_scale_is_the_printed_unit_and_keys_are_the_runs_metric_keys():
    rows = parse_table({"scale": 1, "rows": [
        {"table": "T", "row": "r", "model": "m", "measured_by": "audit", "verifier": "exact", "benchmark": "mgsm",
         "metric": "fnr", "values": {"ja": 0.642}},
        {"table": "T", "row": "r", "model": "m", "measured_by": "audit", "verifier": "exact", "benchmark": "mgsm",
         "metric": "vlb_fnr", "values": {"all": 0.569}}]})
    assert [(r.key, r.fraction) for r in rows] == [("audit/exact/ja/fnr", 0.642), ("audit/exact/vlb_fnr", 0.569)]
    (qa,) = parse_table({"scale": 100, "rows": [{"table": "T", "row": "r", "model": "m", "measured_by": "grpo",
                                                 "benchmark": "mkqa", "metric": "fem", "values": {"all": 41.2}}]})
    assert (qa.key, qa.fraction) == ("evaluation/mkqa/all/fem", 0.412)
    with pytest.raises(ValueError, match="field 'scale': expected 1 \\(fractions\\) or 100"):
        parse_table({"scale": 10, "rows": []}, "x.yaml")
