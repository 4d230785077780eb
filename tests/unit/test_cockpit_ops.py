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
