"""A generation's progress line: said when it starts, before its first batch, and once per batch after."""

from __future__ import annotations

import logging

from components.progress import LOGGER, generation_progress, record_fields


class Recorder(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines: list[tuple[str, str, bool]] = []

    def emit(self, record):
        self.lines.append(record_fields(record))


def recorded(body):
    handler = Recorder()
    progress = logging.getLogger(LOGGER)
    progress.addHandler(handler)
    try:
        body()
    finally:
        progress.removeHandler(handler)
    return handler.lines


def test_a_generation_says_it_started_before_any_batch_is_done():
    def generate():
        with generation_progress("base", 48) as line:
            line.advance(16, 320, 4.0)

    assert recorded(generate) == [
        ("generate base", "generate base: prompts 0/48, starting", False),
        ("generate base", "generate base: prompts 16/48, 80.0 tokens/s", False),  # 320 tokens / 4 s
    ]


def test_a_nested_generation_and_an_empty_one_say_nothing_more():
    def generate():
        with generation_progress("base", 0):
            pass
        with generation_progress("sft", 2) as outer, generation_progress("inner", 2) as inner:
            assert inner is outer
            inner.advance(2, 10, 1.0)

    assert recorded(generate) == [("generate sft", "generate sft: prompts 0/2, starting", False),
                                  ("generate sft", "generate sft: prompts 2/2, 10.0 tokens/s", True)]


def test_a_batch_longer_than_the_wait_says_so_while_it_runs_and_a_short_one_says_nothing(monkeypatch):
    import time

    from components.generation.base import run_batches

    def generate(batch, index):
        time.sleep(0.35 if index == 0 else 0.0)  # the first batch outlasts the wait (0.1 s here), the second not
        return [[] for _ in batch]

    monkeypatch.setattr("components.progress.WAIT_S", 0.1)
    lines = [line for _, line, _ in recorded(lambda: run_batches(["a", "b", "c"], 2, generate, model_name="base",
                                                                   progress=False))]
    waited = [line for line in lines if "generating" in line]
    assert waited and all(line.startswith("generate base: prompts 0/3, - tokens/s; generating 2 prompt(s), ")
                          and line.endswith(" so far") for line in waited)  # said while the first batch ran
    assert lines[-2:] == ["generate base: prompts 2/3, 0.0 tokens/s", "generate base: prompts 3/3, 0.0 tokens/s"]


def test_a_wait_names_what_it_waits_for_and_ends_with_its_duration():
    import time

    from components.progress import waiting

    def convert():
        with waiting("embedded model", "embedded model: converting", every_s=0.1, done="embedded model: converted"):
            time.sleep(0.25)

    lines = recorded(convert)
    assert lines[0] == ("embedded model", "embedded model: converting", False)
    assert ("embedded model", "embedded model: converting, 0s so far", False) in lines[1:-1]
    assert lines[-1] == ("embedded model", "embedded model: converted in 0s", True)
