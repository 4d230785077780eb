"""A full disk named as such: a project on a small filesystem that is full before the command (refused at once, no
server started), and one that fills while it generates (stopped within seconds, naming the disk, rows kept).

The filesystem is a real tmpfs of a few megabytes mounted for the test (``mount -t tmpfs -o size=…``), which needs
root (CAP_SYS_ADMIN); where mounting is not permitted the tests skip, saying so. The command is the real one with a
fake backend that takes its time (``tests.helpers.slow_cli``) and its own temporary Prefect server.
"""

from __future__ import annotations

import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest

from tests.e2e.test_dead_servers import communicate, journal_rows
from tests.e2e.test_robustness import environment, evaluate, write_project

pytestmark = pytest.mark.slow


def mounted(directory: Path, size: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {done.stderr.strip() or done.returncode}")
    return directory


@pytest.fixture
def small_disk(tmp_path):
    made = []

    def make(size: str) -> Path:
        made.append(mounted(tmp_path / f"disk-{len(made)}", size))
        return made[-1]

    yield make
    for directory in made:
        subprocess.run(["umount", "--lazy", str(directory)], capture_output=True)


def fill(directory: Path) -> None:
    """Write zeros into ``directory`` until its filesystem refuses (ENOSPC)."""
    with open(directory / "filler", "wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 2**20)
                handle.flush()
        except OSError:
            pass


def test_a_project_on_a_full_disk_is_refused_before_anything_runs(small_disk):
    disk = small_disk("5m")
    write_project(disk / "project", questions=2, batch_size=2)
    fill(disk)
    start = time.monotonic()
    process = evaluate(disk / "project", environment(delay_s=0))
    _, err = communicate(process, timeout=90)
    assert time.monotonic() - start < 30 and process.returncode == 2, err[-3000:]
    assert f"no space left on {disk} ({disk / 'project'})" in err and len(err.strip().splitlines()) == 1, err[-3000:]
    assert not (disk / "project" / ".prefect" / "prefect.db").exists()  # no server was started on it


def temporary_server_port(pid: int) -> int:
    """The port the command's temporary Prefect server listens on (a process below the command)."""
    for child in psutil.Process(pid).children(recursive=True):
        ports = [c.laddr.port for c in child.net_connections("tcp") if c.status == psutil.CONN_LISTEN]
        if ports:
            return ports[0]
    raise AssertionError("no temporary Prefect server below the command")


def preflight_status(url: str, origin: str) -> int:
    request = urllib.request.Request(url, method="OPTIONS", headers={
        "Origin": origin, "Access-Control-Request-Method": "POST"})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code


def test_a_disk_that_fills_during_generation_stops_the_command_naming_it(small_disk):
    disk = small_disk("80m")  # room to start (64 MB), then filled
    project = disk / "project"
    write_project(project, questions=40, batch_size=2)
    process = evaluate(project, environment(delay_s=0.5))
    deadline = time.monotonic() + 240
    while not journal_rows(project):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()[1][-4000:]
        time.sleep(0.2)
    server = f"http://127.0.0.1:{temporary_server_port(process.pid)}"
    assert preflight_status(f"{server}/api/flow_runs/filter", "http://evil.example") == 400  # closed too
    fill(disk)
    filled = time.monotonic()
    _, err = communicate(process, timeout=90)
    assert time.monotonic() - filled < 30 and process.returncode == 1, err[-4000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"polyreason: no space left on {disk} ({project})"), err[-4000:]
    assert "generated rows kept" in last and "free some space there, then resume with" in last
    assert journal_rows(project)  # the rows generated before the disk filled
