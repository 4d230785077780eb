"""Stage progress in the Prefect flow run's logs, where a person watching the UI looks.

The stages report progress on the ``polyreason.progress`` logger (``components.progress``);
the command line shows it on the terminal. A flow run started by a worker has no
terminal, so ``install`` adds a handler that passes each line to Prefect's run logger
(``prefect.get_run_logger``: the flow run's, or the task run's inside a task, both shown
on the flow run's Logs tab). A generation or a training updates its line many times a
second; the handler passes a line's first update, its last (``final``) and, in between,
at most one update per ``POLYREASON_PROGRESS_LOG_S`` seconds (10 by default), so
the log reads like the terminal did. Outside a Prefect run the handler does nothing.

The flow run a person started (a Run form entry flow, the nightly) runs the stages as
subflows, two levels down; inside ``on_started_run`` each line also goes to that flow
run's log (Prefect's API log handler takes the run from the record's ``flow_run_id``), so
the page the person is looking at says which stage runs and how far it is. ``announce``
writes a stage's first line (``grpo: started``) the same way. A stage placed on another work
pool runs in that pool's worker process: the run that placed it (``progress_tags``) names
itself in a tag of the placed flow run, and the placed stage's lines go to the run that tag names
(``started_run``), so they reach the started run's page too.

``install`` also puts the command line's library filters (``components.quiet``) in
place, so a worker's flow-run process logs no more library chatter than a terminal run.
"""

from __future__ import annotations

import logging
import os
import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

from components.progress import logger as progress_logger
from components.progress import record_fields
from components.quiet import quiet_libraries

INTERVAL_S = 10.0
STARTED: ContextVar[str | None] = ContextVar("polyreason_started_flow_run", default=None)
FLOW_RUNS_LOGGER = "prefect.flow_runs"  # Prefect's logger of flow runs: its API handler ships each record
PROGRESS_TAG = "polyreason-progress-to:"  # on a placed stage's flow run: the run its progress also goes to


@contextmanager
def on_started_run() -> Iterator[None]:
    """Inside this block, progress lines and results published with ``started=True`` also land on the current
    flow run (the one a person started), whichever subflow reports them."""
    from prefect.runtime import flow_run

    token = STARTED.set(flow_run.get_id())
    try:
        yield
    finally:
        STARTED.reset(token)


def progress_tags() -> list[str]:
    """The tag of a stage placed from here: the flow run its progress goes to (the started run, else this one)."""
    target = started_run() or current_flow_run()
    return [f"{PROGRESS_TAG}{target}"] if target else []


def started_run() -> str | None:
    """The flow run a person started, when this code reports to one: ``on_started_run``'s, else the run named by
    this flow run's ``PROGRESS_TAG`` (a placed stage, in its pool's worker process). Read from the flow run's own
    tags each time, so nothing outlives the tagged run in a process that runs other flows afterwards."""
    from prefect.context import FlowRunContext

    started = STARTED.get()
    if started is not None:
        return started
    context = FlowRunContext.get()
    flow_run = context.flow_run if context is not None else None
    tags = (flow_run.tags or []) if flow_run is not None else []
    return next((tag[len(PROGRESS_TAG):] for tag in tags if tag.startswith(PROGRESS_TAG)), None)


def current_flow_run() -> str | None:
    """The id of the flow run this code runs in (a task's flow run inside a task); ``None`` outside one."""
    from prefect.context import FlowRunContext, TaskRunContext

    flow_context, task_context = FlowRunContext.get(), TaskRunContext.get()
    if flow_context is not None and flow_context.flow_run is not None:
        return str(flow_context.flow_run.id)
    return str(task_context.task_run.flow_run_id) if task_context is not None else None


def to_started_run(line: str, level: int = logging.INFO) -> None:
    """``line`` in the log of the flow run a person started, when that is not the run reporting it."""
    started, here = started_run(), current_flow_run()
    if started and here and started != here:
        logging.getLogger(FLOW_RUNS_LOGGER).log(level, line, extra={"flow_run_id": started, "task_run_id": None})


def announce(line: str) -> None:
    """A stage's first line, in its flow run's log and in the started run's (outside a flow run: nothing)."""
    if current_flow_run() is None:
        return
    from prefect import get_run_logger

    get_run_logger().info(line)
    to_started_run(line)


class PrefectProgressHandler(logging.Handler):
    """Passes progress lines to the current Prefect run's logger, each line's updates at most every ``interval_s``."""

    def __init__(self, interval_s: float | None = None, clock=time.monotonic):
        super().__init__(logging.INFO)
        self.interval_s = float(os.environ.get("POLYREASON_PROGRESS_LOG_S", INTERVAL_S)) \
            if interval_s is None else interval_s
        self.clock = clock
        self.last: dict[str, float] = {}  # line key -> when it was last passed on

    def due(self, key: str, final: bool) -> bool:
        """Whether this update of line ``key`` goes to the log (its first, its last, or one per interval)."""
        now = self.clock()
        if not final and key in self.last and now - self.last[key] < self.interval_s:
            return False
        if final:
            self.last.pop(key, None)
        else:
            self.last[key] = now
        return True

    def emit(self, record: logging.LogRecord) -> None:
        if current_flow_run() is None:
            return
        key, line, final = record_fields(record)
        if not self.due(key, final):
            return
        from prefect import get_run_logger

        try:
            get_run_logger().info(line)
            to_started_run(line)
        except Exception:  # noqa: BLE001 - progress is not worth failing a run
            pass


def installed() -> bool:
    """Whether this process passes progress lines to the Prefect run's log (``install`` ran)."""
    return any(isinstance(handler, PrefectProgressHandler) for handler in progress_logger().handlers)


def install() -> None:
    """Progress to the Prefect run's logs and the library filters, once per process."""
    quiet_libraries()
    if not installed():
        progress_logger().addHandler(PrefectProgressHandler())
