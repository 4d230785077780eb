"""Ctrl-C and SIGTERM end a command within seconds, leave nothing running, and say what was kept.

What happens on SIGINT or SIGTERM (``install`` sets it up for every command):

1. The signal's C-level handler writes its number to a wakeup pipe; a watcher
   thread reads it at once, even while the main thread sits in a long C call
   (a generation step), ends the child processes (trainers, by PID)
   and arms a deadline of ``DEADLINE_S``.
2. The Python handler (main thread) notes what was being written
   (``runtime.artifacts.in_progress``) and raises ``Interrupted``, a
   ``KeyboardInterrupt``: Prefect reports the flow run Crashed, every
   ``tracking.stage_run`` it unwinds closes its MLflow run KILLED (the recipe's
   parent and children alike), and the artifact locks are released; the
   journals and checkpoints stay for the re-run. During a flow Prefect turns
   SIGTERM into its own ``TerminationSignal`` first and re-sends the signal
   after unwinding, which ends here too.
3. The CLI calls ``finish``: it closes what the unwinding missed (MLflow runs
   still open, flow runs this process started that are still running), and
   returns one line — what was kept, which runs were marked KILLED, the command
   that resumes — and the exit code (130 for SIGINT, 143 for SIGTERM). A command
   that keeps no steps (``up``, ``worker``, ``deploy``) says what it did instead:
   it sets its own line with ``describe``.
4. If the main thread has not finished ``DEADLINE_S`` after the signal (a call
   that does not return), the watcher does step 3 itself, runs the exit handlers
   (servers stopped at exit: a vLLM server, the temporary Prefect server) for at
   most ``STEP_TIMEOUT_S`` and leaves with ``os._exit``; a second Ctrl-C does the
   same at once.

The watchdog (``cli.watchdog``) stops a command the same way when a server it
uses dies or its disk fills (``stop_for``: the cause is noted, then this process
sends itself SIGINT), or names that cause when a call failed first
(``close_for``). The line then says what failed instead of "interrupted", skips
closing runs on the server that is gone (the next command closes them: they say
so), says how to bring it back, and the exit code is 1.
"""

from __future__ import annotations

import logging
import os
import shlex
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

DEADLINE_S = 6.0
STEP_TIMEOUT_S = 3.0  # each closing step (MLflow, Prefect) gets this long
STOPPED_CODE = 1  # a command the watchdog stopped (a dead server, a full disk) failed


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived; ``signum`` says which."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@dataclass
class Problem:
    """What stopped a command: the line's middle part, the service it concerns (None: the disk) and the way back."""

    what: str
    service: str | None
    remedy: str


@dataclass
class _State:
    signum: int | None = None
    kept: list[str] = field(default_factory=list)
    ended: list[str] = field(default_factory=list)  # child processes ended, e.g. "prefect worker (pid 12)"
    describe: Callable[[str, list[str]], str] | None = None  # the command's own line (signal name, ended)
    finished: bool = False
    code: int | None = None  # the exit code, once ``finish`` has run
    cause: Problem | None = None  # what the watchdog stopped the command for
    own_signal: bool = False  # the pending SIGINT was sent by the watchdog
    closing: bool = False  # the main thread is already closing the command after an error
    deadline: threading.Timer | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


STATE = _State()


def describe(line: Callable[[str, list[str]], str]) -> None:
    """This command's interrupt line: ``line(signal name, child processes ended)``, instead of the recipe's."""
    STATE.describe = line


def install() -> None:
    """Handle SIGINT and SIGTERM in this (main) thread; a no-op elsewhere or when done already."""
    if threading.current_thread() is not threading.main_thread() or getattr(install, "done", False):
        return
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _handler)
    threading.Thread(target=_watch, args=(read_end,), name="polyreason-interrupts", daemon=True).start()
    install.done = True


def _handler(signum, frame) -> None:  # noqa: ARG001 - signal handler signature
    with STATE.lock:
        if STATE.own_signal and (STATE.finished or STATE.closing):  # the watchdog's signal, after the command
            STATE.own_signal = False  # started closing itself: nothing left to interrupt
            return
        first = STATE.signum is None
        STATE.signum = STATE.signum or signum
        if first:
            STATE.kept = _in_progress()
    if not first and not STATE.finished:  # a second signal: leave now
        _leave_now()
    raise Interrupted(signum)


def _watch(read_end: int) -> None:
    while True:
        data = os.read(read_end, 16)
        if not data or not any(byte in (signal.SIGINT, signal.SIGTERM) for byte in data):
            continue
        with STATE.lock:
            STATE.signum = STATE.signum or next(b for b in data if b in (signal.SIGINT, signal.SIGTERM))
            if not STATE.kept:
                STATE.kept = _in_progress()
        from runtime.processes.children import end_children

        STATE.ended += end_children()
        _arm_deadline()
        return


def _arm_deadline() -> None:
    """Leave by ``_leave_now`` if the main thread has not finished ``DEADLINE_S`` from now (once)."""
    with STATE.lock:
        if STATE.deadline is not None:
            return
        STATE.deadline = threading.Timer(DEADLINE_S, _leave_now)
    STATE.deadline.daemon = True
    STATE.deadline.start()


def stop_for(problem: Problem) -> None:
    """Stop the command as an interrupt would, for ``problem`` (from the watchdog's thread)."""
    with STATE.lock:
        if STATE.signum is not None or STATE.finished or STATE.closing:  # already stopping
            return
        STATE.cause, STATE.own_signal = problem, True
    silence_libraries()
    os.kill(os.getpid(), signal.SIGINT)


def start_closing() -> None:
    """The main thread closes the command after an error: the watchdog sends no signal from now on."""
    with STATE.lock:
        STATE.closing = True


def close_for(problem: Problem) -> tuple[str, int]:
    """Close a command whose call failed because of ``problem`` (main thread): its line and exit code."""
    with STATE.lock:
        STATE.cause = STATE.cause or problem
        STATE.closing = True
    silence_libraries()
    _arm_deadline()
    return finish()


def silence_libraries() -> None:
    """No more log lines once the watchdog's cause is known: the libraries' errors and retries about a dead server
    or a full disk would only repeat the command's last line, at length. Prefect's internal loggers ignore
    ``logging.disable``, so every handler is closed to records too."""
    logging.disable(logging.CRITICAL)
    for logger in [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]:
        for handler in getattr(logger, "handlers", []):
            handler.setLevel(logging.CRITICAL + 1)


def stopping() -> Problem | None:
    """What the watchdog stopped this command for, if it did."""
    return STATE.cause


def _in_progress() -> list[str]:
    from runtime.artifacts import in_progress

    return in_progress()


def _leave_now() -> None:
    """The deadline path: close everything from this thread, say so, stop the server, exit."""
    line, code = finish()
    if line:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    import atexit

    from cli.prefect_server import stop_temporary_server

    _bounded(atexit._run_exitfuncs)  # servers that stop at exit (a vLLM server, the temporary Prefect server)
    _bounded(stop_temporary_server)
    os._exit(code)


def _bounded(step, *args):
    """Run a closing step for at most ``STEP_TIMEOUT_S``; its result, or ``None`` when it failed or took too long."""
    result: list = []

    def run() -> None:
        try:
            result.append(step(*args))
        except Exception:  # noqa: BLE001 - closing after an interrupt: one failed step must not stop the others
            result.append(None)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(STEP_TIMEOUT_S)
    return result[0] if result else None


def finish() -> tuple[str, int]:
    """Close what an interrupt left open; the one line to print and the exit code (once; later calls: "")."""
    with STATE.lock:
        if STATE.finished:
            return "", STATE.code if STATE.code is not None else 128 + (STATE.signum or signal.SIGINT)
        STATE.finished = True
    signum = STATE.signum or signal.SIGINT
    cause = STATE.cause
    from runtime import tracking
    from runtime.processes.abandoned import STARTED, crash_flow_runs
    from runtime.processes.children import end_children

    STATE.ended += end_children()
    if not STATE.kept:
        STATE.kept = _in_progress()
    if cause is None or cause.service != "MLflow":
        for run in tracking.open_runs():
            _bounded(tracking.finish_run, run, "KILLED")
    reason = f"stopped: {cause.what}" if cause else f"interrupted by {signal.Signals(signum).name}"
    if STARTED and (cause is None or cause.service != "Prefect"):
        _bounded(crash_flow_runs, list(STARTED), reason)
    if cause is not None:
        line, STATE.code = cause_line(cause, STATE.kept, list(tracking.KILLED), tracking.open_runs()), STOPPED_CODE
    elif STATE.describe is not None:
        line, STATE.code = STATE.describe(signal.Signals(signum).name, list(STATE.ended)), 128 + signum
    else:
        line, STATE.code = summary_line(signum, STATE.kept, list(tracking.KILLED)), 128 + signum
    return line, STATE.code


def cause_line(cause: Problem, kept: list[str], killed: list[str], still_open: list) -> str:
    """One line: what failed, what was kept, which runs were closed or stay open, the way back, how to resume.

    >>> cause_line(Problem("the MLflow server died: x", "MLflow", "restart it with: polyreason up"), [], [],
    ...            [type("Run", (), {"run_id": "0123456789"})])[:117]
    'polyreason: the MLflow server died: x; kept every finished step (cached); MLflow run(s) 01234567 stay RUNNING until t'
    """
    what = "; ".join(kept) if kept else "every finished step (cached)"
    runs = f"; MLflow run(s) {', '.join(run[:8] for run in killed)} marked KILLED" if killed else ""
    if still_open:
        runs += (f"; MLflow run(s) {', '.join(run.run_id[:8] for run in still_open)} stay RUNNING until the next "
                 "command in this project marks them KILLED")
    if cause.service == "Prefect":
        runs += "; the next command marks this command's Prefect flow runs Crashed"
    command = shlex.join(["polyreason", *sys.argv[1:]])
    return f"polyreason: {cause.what}; kept {what}{runs}; {cause.remedy}, then resume with: {command}"


def summary_line(signum: int, kept: list[str], killed: list[str]) -> str:
    """One line: the signal, what was kept, the runs marked KILLED, how to resume.

    >>> summary_line(2, ["/p/artifacts/generation/ab12 (40 of 160 generated rows kept)"], ["0123456789"])[:58]
    'polyreason: interrupted by SIGINT; kept /p/artifacts/gener'
    """
    what = "; ".join(kept) if kept else "every finished step (cached)"
    runs = f"; MLflow run(s) {', '.join(run[:8] for run in killed)} marked KILLED" if killed else ""
    command = shlex.join(["polyreason", *sys.argv[1:]])
    return (f"polyreason: interrupted by {signal.Signals(signum).name}; kept {what}{runs}; "
            f"resume with: {command}")
