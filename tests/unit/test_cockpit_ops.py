"""The cockpit commands' small decisions: which port ``up`` takes, and each command's own interrupt line."""

from __future__ import annotations

import signal
import socket

import pytest

from cli import interrupts
from cli.stack_launch import StackError, choose_port


def test_port_zero_means_a_free_port_chosen_before_the_server_starts():
    port = choose_port("prefect", 0)
    assert port > 0
    with socket.socket() as sock:  # free: this process can bind it
        sock.bind(("127.0.0.1", port))


@pytest.mark.parametrize("asked", [-1, 65536, 70000])
def test_a_port_outside_tcp_is_refused_in_one_line_naming_the_option(asked):
    with pytest.raises(StackError) as refused:
        choose_port("mlflow", asked)
    assert str(refused.value).startswith(f"--mlflow-port {asked}: not a TCP port") and "\n" not in str(refused.value)


def test_a_taken_port_is_refused():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        taken = sock.getsockname()[1]
        with pytest.raises(StackError, match=f"port {taken} .* already taken"):
            choose_port("prefect", taken)


@pytest.fixture
def fresh_interrupt_state(monkeypatch):
    state = interrupts._State(signum=signal.SIGTERM)
    monkeypatch.setattr(interrupts, "STATE", state)
    return state


def test_a_command_that_describes_its_interrupt_gets_its_own_line_and_exit_code(fresh_interrupt_state):
    fresh_interrupt_state.ended = ["prefect worker for pool p (pid 12)"]
    interrupts.describe(lambda name, ended: f"polyreason worker: stopped by {name}; ended {', '.join(ended)}")
    line, code = interrupts.finish()
    assert (line, code) == ("polyreason worker: stopped by SIGTERM; ended prefect worker for pool p (pid 12)", 143)


def test_without_its_own_line_a_command_says_what_was_kept_and_how_to_resume(fresh_interrupt_state):
    line, code = interrupts.finish()
    assert line.startswith("polyreason: interrupted by SIGTERM; kept every finished step (cached)")
    assert "resume with: polyreason" in line and code == 143


def test_status_says_each_server_and_each_pool_s_workers_in_a_line():
    from pathlib import Path

    from cli.cockpit import status_text

    servers = {"prefect": {"pid": 11, "alive": True, "healthy": True, "url": "http://127.0.0.1:4200"},
               "mlflow": {"pid": 12, "alive": False, "healthy": False, "url": "http://127.0.0.1:5000"}}
    text = status_text({"running": False, "servers": servers, "workers": {"polyreason": ["w1"], "gpu": []}},
                       Path("."))
    assert text.splitlines() == [
        "prefect  http://127.0.0.1:4200  pid 11, healthy",
        "mlflow   http://127.0.0.1:5000  pid 12, NOT answering (process gone)",
        "pool     gpu: no worker: polyreason worker --pool gpu",
        "pool     polyreason: 1 worker(s) online"]
    assert status_text({"running": False}, Path("/p")).startswith("nothing runs for /p; start it: polyreason up")
    assert status_text({"running": False, "servers": servers}, Path(".")).endswith(
        "workers  unknown: the Prefect server does not answer")
