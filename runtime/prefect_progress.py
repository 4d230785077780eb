"""Stage progress in the Prefect flow run's logs, where a person watching the UI looks.

The stages report progress on the ``polyreason.progress`` logger (``components.progress``);
the command line shows it on the terminal. A flow run started by a worker has no
terminal, so ``install`` adds a handler that passes each line to Prefect's run logger
(``prefect.get_run_logger``: the flow run's, or the task run's inside a task, both shown
on the flow run's Logs tab). A generation or a training updates its line many times a
second; the handler passes a line's first update, its last (``final``) and, in between,
at most one update per ``POLYREASON_PROGRESS_LOG_S`` seconds (10 by default), so
the log reads like the terminal did. Outside a Prefect run the handler does nothing.

``install`` also puts the command line's library filters (``components.quiet``) in
place, so a worker's flow-run process logs no more library chatter than a terminal run.
"""

from __future__ import annotations

import logging
import os
import time

from components.progress import logger as progress_logger
from components.progress import record_fields
from components.quiet import quiet_libraries

INTERVAL_S = 10.0


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
        from prefect.context import FlowRunContext, TaskRunContext

        if FlowRunContext.get() is None and TaskRunContext.get() is None:
            return
        key, line, final = record_fields(record)
        if not self.due(key, final):
            return
        from prefect import get_run_logger

        try:
            get_run_logger().info(line)
        except Exception:  # noqa: BLE001 - progress is not worth failing a run
            pass


def install() -> None:
    """Progress to the Prefect run's logs and the library filters, once per process."""
    quiet_libraries()
    progress = progress_logger()
    if not any(isinstance(handler, PrefectProgressHandler) for handler in progress.handlers):
        progress.addHandler(PrefectProgressHandler())
