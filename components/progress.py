"""Progress a person can follow: one short line per stage, whichever process does the work.

Stages report through the standard library's ``logging``: one record per update
on the logger ``polyreason.progress``, carrying which line it updates (``key``,
e.g. ``sft`` or ``generate base``) and whether it is that line's last word
(``final``). Components never print; whoever owns the terminal attaches the
handler that shows the lines (the command line: ``cli/terminal.py``). With no
handler attached the records go nowhere (Python's last-resort handler shows only
warnings).

A generation is one line however its prompts are cut (``generation_progress``:
the journal's chunks and the backend's own batches advance the same line).

A child process (the trainer, started by ``accelerate launch``) has no terminal:
its output goes to a log file. ``install_child_handler`` makes it write every
update there as one marked line (``MARK`` and a JSON object), so the log keeps
the progress too, and the parent, while it waits for the child, reads the new
marked lines (``MarkedLines``) and reports them on its own logger.

>>> duration(65), duration(7), duration(3725)
('1m05s', '7s', '1h02m')
>>> training_line("sft", 8, 16, {"loss": 1.23456}, elapsed_s=40.0, steps_done=8)
'sft: step 8/16, loss 1.235, 40s left'
>>> generation_line("base", 12, 48, tokens=600, seconds=20.0)
'generate base: prompts 12/48, 30.0 tokens/s'
>>> unmark(marked("sft", "sft: step 1/2", False))
('sft', 'sft: step 1/2', False)
>>> unmark("Some other line of the trainer") is None
True

A wait longer than ``WAIT_S`` seconds says what it waits for while it lasts (``waiting``: a model
converted once, a generation batch running on a CPU).
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import IO

LOGGER = "polyreason.progress"
MARK = "polyreason-progress "
KEY, FINAL = "progress_key", "progress_final"


def logger() -> logging.Logger:
    """The progress logger: INFO and above, never passed on to the root logger's handlers."""
    progress = logging.getLogger(LOGGER)
    progress.setLevel(logging.INFO)
    progress.propagate = False
    return progress


def report(key: str, line: str, final: bool = False) -> None:
    """Say ``line`` as the current state of progress line ``key`` (``final``: its last update)."""
    logger().info(line, extra={KEY: key, FINAL: final})


def record_fields(record: logging.LogRecord) -> tuple[str, str, bool]:
    """``(key, line, final)`` of a progress record (a record from elsewhere is its own key, final)."""
    line = record.getMessage()
    return getattr(record, KEY, line), line, bool(getattr(record, FINAL, True))


def duration(seconds: float) -> str:
    """``7s``, ``1m05s``, ``1h02m``: short enough for a progress line."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def _value(values: Mapping[str, float]) -> str | None:
    """The number a person watches: GRPO's mean reward when logged, else the loss."""
    for name in ("reward", "loss"):
        value = values.get(name)
        if isinstance(value, (int, float)) and value == value:
            return f"{name} {value:.3f}"
    return None


def training_line(stage: str, step: int, total: int, values: Mapping[str, float], *, elapsed_s: float,
                  steps_done: int, values_step: int | None = None) -> str:
    """``sft: step 8/16, loss 1.235, 40s left`` (the time left from this run's pace: ``steps_done`` in ``elapsed_s``);
    ``values_step``: the step the values were logged at, named when it is not ``step`` (``loss 1.235 at step 7``)."""
    parts = [f"step {step}/{total}" if total > 0 else f"step {step}"]
    shown = _value(values)
    if shown:
        stale = values_step is not None and values_step != step
        parts.append(f"{shown} at step {values_step}" if stale else shown)
    if total > 0 and step >= total:
        parts.append(f"done in {duration(elapsed_s)}")
    elif total > 0 and steps_done > 0:
        parts.append(f"{duration(elapsed_s / steps_done * (total - step))} left")
    return f"{stage}: {', '.join(parts)}"


def generation_line(label: str, done: int, total: int, *, tokens: int, seconds: float) -> str:
    """``generate base: prompts 12/48, 30.0 tokens/s`` (tokens/s over the backend's time so far)."""
    speed = f"{tokens / seconds:.1f} tokens/s" if seconds > 0 else "- tokens/s"
    return f"generate {label}: prompts {done}/{total}, {speed}"


def stage_label(run_name: str, stage: str) -> str:
    """``evaluation base`` for ``base evaluation · cpu-demo``, ``sft`` for ``sft · cpu-demo`` (what the run is: its
    name's first part, the stage first, as the progress lines of a stage start).

    >>> stage_label("base evaluation · cpu-demo", "evaluation"), stage_label("recipe · tiny", "recipe")
    ('evaluation base', 'recipe')
    """
    what = run_name.split(" · ", 1)[0]
    if what == stage or not what.endswith(f" {stage}"):
        return stage
    return f"{stage} {what.removesuffix(f' {stage}')}"


def report_stage(label: str, seconds: float, cached: bool | None) -> None:
    """The progress line that closes a stage: how long it took, and whether it reused cached work."""
    if label == "recipe":  # the command's own result follows
        return
    reuse = {True: ", cached", False: ""}.get(cached, "")
    report(f"stage {label}", f"{label}: done in {duration(seconds)}{reuse}", final=True)


def marked(key: str, line: str, final: bool) -> str:
    """One update as a line of a child's log: ``MARK`` + JSON."""
    return MARK + json.dumps({"key": key, "line": line, "final": final}, ensure_ascii=False)


def unmark(text: str) -> tuple[str, str, bool] | None:
    """``(key, line, final)`` of a marked log line; ``None`` for any other line."""
    if not text.startswith(MARK):
        return None
    try:
        update = json.loads(text[len(MARK):])
        return str(update["key"]), str(update["line"]), bool(update["final"])
    except (ValueError, KeyError, TypeError):
        return None


class GenerationProgress:
    """One generation's progress line: prompts done of ``total``, and tokens/s over the time spent generating them
    (loading the model is not generating)."""

    def __init__(self, label: str, total: int):
        self.label, self.total = label, total
        self.done = self.tokens = 0
        self.seconds = 0.0
        self.busy = False  # inside ``running``

    def start(self) -> None:
        """Say that the generation has begun, before its first batch: loading a model and a first batch can take
        minutes on a CPU, and a command silent for that long looks hung."""
        report(f"generate {self.label}", f"generate {self.label}: prompts 0/{self.total}, starting")

    def advance(self, prompts: int, tokens: int, seconds: float) -> None:
        """``prompts`` more are done, with ``tokens`` generated tokens in ``seconds``; report the line."""
        self.done, self.tokens, self.seconds = self.done + prompts, self.tokens + tokens, self.seconds + seconds
        line = generation_line(self.label, self.done, self.total, tokens=self.tokens, seconds=self.seconds)
        report(f"generate {self.label}", line, final=self.done >= self.total)


    @contextmanager
    def running(self, prompts: int) -> Iterator[None]:
        """Around one backend call of ``prompts`` prompts: while it lasts, the line says so every ``WAIT_S`` seconds
        (a CPU batch can take minutes); inside another call's block (a chunk that batches again), nothing more."""
        if self.busy:
            yield
            return
        self.busy = True
        base = generation_line(self.label, self.done, self.total, tokens=self.tokens, seconds=self.seconds)
        try:
            with waiting(f"generate {self.label}", f"{base}; generating {prompts} prompt(s)", at_start=False):
                yield
        finally:
            self.busy = False


_GENERATION: ContextVar[GenerationProgress | None] = ContextVar("polyreason_generation", default=None)
WAIT_S = 10.0  # a wait longer than this says what it waits for, again every WAIT_S seconds


@contextmanager
def waiting(key: str, line: str, every_s: float | None = None, done: str | None = None,
            at_start: bool = True) -> Iterator[None]:
    """Say ``line`` now and, while the block runs, every ``every_s`` seconds with the time spent so far
    (``line, 20s so far``), on progress line ``key``: a long wait names what it waits for. The repeats come from a
    thread that runs in a copy of this context, so they reach the same handlers (a Prefect run's log too).
    ``done``: the line's last word when the block ends well, with how long it took (``done in 1m05s``);
    ``at_start`` false: nothing is said unless the wait lasts ``every_s`` (a short wait says nothing)."""
    import contextvars
    import threading
    import time

    interval = WAIT_S if every_s is None else every_s
    stop, started = threading.Event(), time.monotonic()
    if at_start:
        report(key, line)

    def repeat() -> None:
        while not stop.wait(interval):
            report(key, f"{line}, {duration(time.monotonic() - started)} so far")

    thread = threading.Thread(target=contextvars.copy_context().run, args=(repeat,), daemon=True,
                              name=f"progress {key}")
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
    if done:
        report(key, f"{done} in {duration(time.monotonic() - started)}", final=True)


@contextmanager
def generation_progress(label: str, total: int) -> Iterator[GenerationProgress]:
    """The progress of a generation of ``total`` prompts; inside one already open (a journal's chunks, each a
    backend call that batches again), the outer one, so a generation is one line however it is cut."""
    current = _GENERATION.get()
    if current is not None:
        yield current
        return
    progress = GenerationProgress(label, total)
    if total:
        progress.start()
    token = _GENERATION.set(progress)
    try:
        yield progress
    finally:
        _GENERATION.reset(token)


class _MarkedHandler(logging.Handler):
    """Writes each progress record as a marked line to ``stream`` (a child's stderr, i.e. its log)."""

    def __init__(self, stream: IO[str]):
        super().__init__(logging.INFO)
        self.stream = stream

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.stream.write(marked(*record_fields(record)) + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # a closed log: progress is not worth failing the run
            pass


def install_child_handler(stream: IO[str] | None = None) -> None:
    """In a child process: progress records become marked lines on ``stream`` (default stderr)."""
    progress = logger()
    if not any(isinstance(handler, _MarkedHandler) for handler in progress.handlers):
        progress.addHandler(_MarkedHandler(stream or sys.stderr))


class MarkedLines:
    """The marked lines appended to a child's log since this object was made (complete lines only)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.offset = self.path.stat().st_size if self.path.exists() else 0

    def new(self) -> list[tuple[str, str, bool]]:
        """The updates written since the last call."""
        if not self.path.exists():
            return []
        with self.path.open("rb") as handle:
            handle.seek(self.offset)
            chunk = handle.read()
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self.offset += len(complete)
        lines = complete.decode("utf-8", errors="replace").splitlines()
        return [update for update in map(unmark, lines) if update is not None]

    def relay(self) -> None:
        """Report the new updates on this process's progress logger."""
        for key, line, final in self.new():
            report(key, line, final)
