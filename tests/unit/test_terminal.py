"""What a person reads: progress lines (in place on a terminal, throttled in a file), library warnings filtered
unless verbose, and the result texts of the recipe and ``verify`` (hand-written expected lines)."""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from components.reports.comparison import value_text
from cli.terminal import ProgressHandler, recipe_text, summary_text, verify_text, where_lines
from components.progress import LOGGER, MarkedLines, marked, report
from components.quiet import quiet_libraries

REPO = Path(__file__).resolve().parents[2]


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def shown():
    """Progress records of this test, shown by a handler writing to a string (the clock is the test's)."""
    def attach(tty: bool):
        stream, clock = io.StringIO(), Clock()
        handler = ProgressHandler(stream, every_s=20.0, tty=tty, clock=clock)
        logging.getLogger(LOGGER).addHandler(handler)
        handlers.append(handler)
        return stream, clock

    handlers: list[ProgressHandler] = []
    yield attach
    for handler in handlers:
        logging.getLogger(LOGGER).removeHandler(handler)


def test_in_a_file_a_stage_prints_its_first_line_one_per_interval_and_its_last(shown):
    stream, clock = shown(tty=False)
    for second, step in [(0, 1), (5, 2), (21, 3), (30, 4)]:
        clock.now = second
        report("sft", f"sft: step {step}/5")
    clock.now = 31
    report("sft", "sft: step 5/5, done in 31s", final=True)
    report("generate base", "generate base: prompts 8/16, 12.0 tokens/s")
    assert stream.getvalue().splitlines() == [
        "sft: step 1/5", "sft: step 3/5", "sft: step 5/5, done in 31s", "generate base: prompts 8/16, 12.0 tokens/s"]


def test_on_a_terminal_a_stage_is_one_line_rewritten_in_place(shown):
    stream, _ = shown(tty=True)
    report("sft", "sft: step 1/2")
    report("sft", "sft: step 2/2", final=True)
    report("generate base", "generate base: prompts 4/8")
    report("stage evaluation base", "evaluation base: done in 9s", final=True)
    assert stream.getvalue() == ("\r\x1b[Ksft: step 1/2" "\r\x1b[Ksft: step 2/2\n"
                                 "\r\x1b[Kgenerate base: prompts 4/8" "\n\r\x1b[Kevaluation base: done in 9s\n")


def test_a_childs_marked_lines_are_relayed_and_its_other_output_is_not(tmp_path, shown):
    stream, _ = shown(tty=False)
    log = tmp_path / "train.log"
    log.write_text(marked("sft", "sft: step 1/9 of an earlier run", False) + "\n", encoding="utf-8")
    lines = MarkedLines(log)  # from the end: an earlier run's lines stay in the log only
    with log.open("a", encoding="utf-8") as handle:
        handle.write("Some trainer output\n" + marked("sft", "sft: step 1/2", False) + "\n"
                     + marked("sft", "sft: step 2/2", True)[:20])  # the child is still writing this one
    lines.relay()
    with log.open("a", encoding="utf-8") as handle:
        handle.write(marked("sft", "sft: step 2/2", True)[20:] + "\n")
    lines.relay()
    assert stream.getvalue().splitlines() == ["sft: step 1/2", "sft: step 2/2"]


def test_a_waiting_task_shows_its_child_processes_progress(tmp_path, shown):
    from runtime.processes.children import run_stage_process

    stream, _ = shown(tty=False)
    child = ("from components.progress import install_child_handler, report\n"
             "install_child_handler()\n"
             "print('loading the model', flush=True)\n"
             "report('grpo', 'grpo: step 1/1, reward 0.500, done in 1s', final=True)\n")
    run_stage_process([sys.executable, "-c", child], tmp_path / "train.log", 60, "GRPO train")
    assert stream.getvalue().splitlines() == ["grpo: step 1/1, reward 0.500, done in 1s"]
    assert "loading the model" in (tmp_path / "train.log").read_text(encoding="utf-8")  # the log keeps everything


def shown_warnings(verbose: bool) -> list[str]:
    """Warnings raised as if from MLflow, transformers and our own code, after ``quiet_libraries``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        previous = os.environ.pop("POLYREASON_VERBOSE", None)
        os.environ["POLYREASON_VERBOSE"] = "1" if verbose else ""
        try:
            quiet_libraries()
        finally:
            os.environ.pop("POLYREASON_VERBOSE")
            if previous is not None:
                os.environ["POLYREASON_VERBOSE"] = previous
        for module in ("mlflow.data.dataset_source_registry", "transformers.generation.utils", "runtime.artifacts"):
            warnings.warn_explicit(f"from {module}", UserWarning, "x.py", 1, module=module)
        warnings.warn_explicit("an error stays", RuntimeWarning, "x.py", 1, module="mlflow.tracking")
    return [str(w.message) for w in caught]


def test_library_warnings_are_filtered_by_module_and_all_shown_when_verbose():
    assert shown_warnings(verbose=False) == ["from runtime.artifacts", "an error stays"]
    assert shown_warnings(verbose=True) == ["from mlflow.data.dataset_source_registry",
                                            "from transformers.generation.utils", "from runtime.artifacts",
                                            "an error stays"]


def test_a_child_process_inherits_the_filters_through_the_environment():
    code = ("import warnings; from components.quiet import quiet_libraries; quiet_libraries(); "
            "warnings.warn_explicit('hidden?', UserWarning, 'x.py', 1, module='mlflow.types.utils')")
    for verbose, expected in (("", ""), ("1", "hidden?")):
        env = dict(os.environ, POLYREASON_VERBOSE=verbose, PYTHONPATH=str(REPO), PYTHONWARNINGS="")
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
        assert (expected in done.stderr) if expected else done.stderr == "", done.stderr


ROWS = [{"benchmark": "mgsm", "lang": "en", "model": "base", "headline": "accuracy", "accuracy": 0.25,
         "accuracy_stderr": 0.217, "accuracy_n": 4},
        {"benchmark": "mgsm", "lang": "en", "model": "sft", "headline": "accuracy", "accuracy": 0.5,
         "accuracy_stderr": 0.25, "accuracy_n": 4, "reference": "base", "accuracy_delta": 0.25,
         "accuracy_delta_low": 0.0, "accuracy_delta_high": 0.75, "n_shared": 4, "accuracy_n_both": 4}]


def test_the_recipe_ends_with_its_headline_the_registered_model_and_where_its_runs_are():
    summary = {"run_id": "abc", "comparison": {"summary": {"rows": ROWS}}, "comparison_table": "FULL-TABLE-TEXT",
               "run_url": "http://127.0.0.1:5000/#/experiments/1/runs/abc",
               "registered": {"uri": "models:/cpu-demo/3", "alias": "candidate"}, "evaluations": []}
    text = recipe_text(summary, "http://127.0.0.1:4200/runs/flow-run/f-1")
    lines = text.splitlines()
    start = lines.index("mgsm, en:")  # after the two-line legend
    assert lines[start:start + 4] == [  # one language, no group: the headline is about it (LCPR unmeasured)
        "mgsm, en:", "lcpr      base  -", "          sft   -", f"accuracy  base  {value_text(ROWS[0], 'accuracy')}"]
    assert (f"sft   {value_text(ROWS[1], 'accuracy')}  sft - base  Δ +0.250 [+0.000, +0.750] (n_both 4)"
            in text)  # the table's own cells, side by side
    assert text.splitlines()[-5:] == [
        "", "registered: models:/cpu-demo/3 (alias candidate)", "",
        "MLflow run: http://127.0.0.1:5000/#/experiments/1/runs/abc",
        "Prefect flow run: http://127.0.0.1:4200/runs/flow-run/f-1"]
    assert "FULL-TABLE-TEXT" not in text and "polyreason compare abc" in text  # the table is in --json


def test_without_a_server_that_outlives_the_command_there_is_no_flow_run_line():
    assert where_lines("sqlite:///m.db (run abc; open with: mlflow ui --backend-store-uri sqlite:///m.db)", None) == [
        "MLflow run: abc in sqlite:///m.db", "  open with: mlflow ui --backend-store-uri sqlite:///m.db"]


def test_a_stage_summary_is_short_dotted_lines():
    summary = {"run_id": "r1", "run_url": "http://m/#/runs/r1", "model": {"tag": "base", "adapter": None},
               "languages": ["en", "fr"], "rows": [{"id": i} for i in range(30)]}
    assert summary_text(summary).splitlines() == ["run_id: r1", "model.tag: base", "languages: en, fr",
                                                  "rows: 30 items", "MLflow run: http://m/#/runs/r1"]


def test_verify_prints_accuracy_fnr_and_fpr_with_wilson_intervals_and_their_n():
    rows = [{"id": "1", "lang": "en", "correct": True, "expected": True},
            {"id": "2", "lang": "en", "correct": True, "expected": False},
            {"id": "3", "lang": "fr", "correct": False, "expected": True},
            {"id": "4", "lang": "fr", "correct": True}]
    text = verify_text({"rows": rows, "aggregate": {"overall": {"fnr_gap": 1.0}}}, "trusted")
    assert text.splitlines()[2:] == [
        "lang     accuracy                    FNR (wrongly rejected)      FPR (wrongly accepted)",
        "en       1.000 [0.342, 1.000] (n 2)  0.000 [0.000, 0.793] (n 1)  1.000 [0.207, 1.000] (n 1)",
        "fr       0.500 [0.095, 0.905] (n 2)  1.000 [0.207, 1.000] (n 1)  -",
        "overall  0.750 [0.301, 0.954] (n 4)  0.500 [0.095, 0.905] (n 2)  1.000 [0.207, 1.000] (n 1)",
        "",
        "FNR gap between languages (largest - smallest): 1.000"]


def test_a_generation_is_one_line_however_its_prompts_are_chunked_and_batched(tmp_path, shown):
    import re

    from components.generation.fake import FakeGenerator
    from components.generation.resumable import generate_to_jsonl
    from components.records import BenchmarkItem
    from components.settings import ModelSettings, SamplingSettings

    stream, _ = shown(tty=True)  # every update shows on a terminal
    items = [BenchmarkItem(str(i), "mgsm", "fr", f"question {i}", str(i)) for i in range(5)]
    generator = FakeGenerator(ModelSettings(backend="fake", model="fake"), tmp_path)
    generate_to_jsonl(generator, items, [f"prompt {i}" for i in range(5)], SamplingSettings(n=1, batch_size=2),
                      tmp_path / "g.jsonl", label="sft")  # chunks of 2, each a backend call batching again
    updates = stream.getvalue().split("\r\x1b[K")[1:]
    assert [re.sub(r", .* tokens/s", "", update) for update in updates] == [
        "generate sft: prompts 0/5, starting", "generate sft: prompts 2/5", "generate sft: prompts 4/5",
        "generate sft: prompts 5/5\n"]

