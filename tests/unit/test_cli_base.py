"""The error handling every ``polyreason`` command gets: a failed request names its URL, --debug is found
anywhere, and the process entry ends with the command's exit code."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import openai

from cli.base import _interrupt, _one_line

REPO = Path(__file__).resolve().parents[2]


def test_an_unreachable_endpoint_is_named_in_the_error_line():
    request = httpx.Request("POST", "http://127.0.0.1:9/v1/completions")
    assert _one_line(openai.APIConnectionError(request=request)) == \
        "Connection error. (http://127.0.0.1:9/v1/completions)"
    assert _one_line(ValueError("first line\nsecond")) == "first line"


def test_interrupts_are_told_from_errors():
    assert _interrupt(KeyboardInterrupt()) and not _interrupt(ValueError()) and not _interrupt(SystemExit(1))


def test_the_process_entry_exits_with_the_command_code_and_one_line(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "cli", "verify", str(tmp_path / "none.jsonl"), "--debug"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "Traceback" in done.stderr and "Refused" in done.stderr  # --debug: traceback
    done = subprocess.run([sys.executable, "-m", "cli", "verify", str(tmp_path / "none.jsonl")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr == f"polyreason verify: {tmp_path / 'none.jsonl'}: no such file\n"
