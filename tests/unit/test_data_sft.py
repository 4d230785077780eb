"""Tables, summaries and the SFT entry point's helpers (no training here: see tests/e2e)."""

from __future__ import annotations

import json

import pytest

from components.data.datasets import NothingKeptError, read_table, require_rows, summary_metrics, write_table
from components.training.runner import (
    COMPLETE_MARKER, accelerate_config_path, last_complete_checkpoint, launch_command, read_metrics,
)
from components.training.sft import sft_examples


def test_tables_round_trip_and_keep_their_schema_when_empty(tmp_path):
    rows = [{"id": "a", "lang": "fr", "question": "q", "gold": "1", "prompt": "p", "completion": "c", "extra": 1}]
    assert read_table(write_table(rows, tmp_path / "sft.parquet", "sft")) == rows
    import pandas as pd

    empty = pd.read_parquet(write_table([], tmp_path / "none.parquet", "traces_rejected"))
    assert len(empty) == 0 and list(empty.columns)[:3] == ["id", "lang", "question"]


def test_summary_metrics_and_refusal():
    summary = {"accepted": 3, "ok": True, "languages": {"fr": {"chrf": 55.5, "rate": 0.75}}}
    assert summary_metrics("data", "translation", summary) == {
        "data/translation/accepted": 3.0, "data/translation/chrf/fr": 55.5, "data/translation/rate/fr": 0.75}
    with pytest.raises(NothingKeptError, match='traces: nothing was kept.*"ja": {"rate": 0.0}'):
        require_rows(0, "traces", {"ja": {"rate": 0.0}})


def test_sft_examples_templates():
    rows = [{"prompt": "Combien ?\nVeuillez raisonner", "completion": "<think>\nx\n</think>\n\n\\boxed{3}"}]
    chat = sft_examples(rows, "chat")[0]
    assert chat["prompt"] == [{"role": "user", "content": rows[0]["prompt"]}]
    assert chat["completion"] == [{"role": "assistant", "content": rows[0]["completion"]}]
    assert sft_examples(rows, "plain")[0] == {"prompt": rows[0]["prompt"] + "\n\n", "completion": rows[0]["completion"]}
    with pytest.raises(ValueError, match="unknown template"):
        sft_examples(rows, "alpaca")


def test_last_complete_checkpoint(tmp_path):
    assert last_complete_checkpoint(tmp_path / "missing") is None
    for step, complete in ((5, True), (10, True), (15, False), (7, True)):
        (tmp_path / f"checkpoint-{step}").mkdir()
        (tmp_path / f"checkpoint-{step}" / "trainer_state.json").write_text("{}")  # trl writes it early
        if complete:
            (tmp_path / f"checkpoint-{step}" / COMPLETE_MARKER).write_text("{}")
    (tmp_path / "runs").mkdir()
    assert last_complete_checkpoint(tmp_path).name == "checkpoint-10"  # 15 was killed mid-save


def test_read_metrics_dedupes_resumed_steps_and_skips_torn_lines(tmp_path):
    path = tmp_path / "metrics.jsonl"
    lines = [{"step": 1, "loss": 3.0}, {"step": 2, "loss": 2.9}, {"step": 3, "loss": 2.8},
             {"step": 3, "loss": 2.7}, {"step": 4, "loss": 2.6}, {"step": 4, "train_runtime": 1.5}]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines) + '{"step": 5, "lo')
    assert read_metrics(path) == [{"step": 1, "loss": 3.0}, {"step": 2, "loss": 2.9}, {"step": 3, "loss": 2.7},
                                  {"step": 4, "loss": 2.6, "train_runtime": 1.5}]


def test_launch_command(tmp_path):
    config = accelerate_config_path("cpu")
    assert config.is_file() and "use_cpu: true" in config.read_text()
    with pytest.raises(ValueError, match="unknown accelerate config 'tpu'.*cpu, cpu-2, cpu-fsdp-2, cpu-zero3-2, multi-gpu-fsdp, multi-gpu-fsdp-4, multi-gpu-zero2, multi-gpu-zero3, multi-gpu-zero3-2, single-gpu"):
        accelerate_config_path("tpu")
    command = launch_command("py", config, tmp_path / "job.json", tmp_path)
    assert command[:5] == ["py", "-m", "accelerate.commands.launch", "--config_file", str(config)]
    assert command[5:8] == ["-m", "components.training", "--job"]
