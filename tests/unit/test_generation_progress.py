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
