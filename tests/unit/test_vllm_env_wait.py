"""The main suite's vLLM tests wait for a build of ``.venv-vllm`` in progress instead of racing it.

The builder here is the shell's ``flock`` (util-linux), as ``.ci/vllm-env.sh`` takes it: it holds the
lock, says so, and writes the stamp before it lets go. An answer other than None is possible only if
the helper waited for the lock, since the stamp does not exist when it is called.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.helpers.vllm_env import STAMP_NAME, built_vllm_python


def fake_venv(tmp_path):
    venv = tmp_path / ".venv-vllm"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    return venv


@pytest.mark.skipif(shutil.which("flock") is None, reason="util-linux flock is not installed")
def test_a_build_in_progress_is_waited_for(tmp_path, monkeypatch):
    monkeypatch.delenv("POLYREASON_VLLM_PYTHON", raising=False)
    venv = fake_venv(tmp_path)
    lock = tmp_path / ".venv-vllm.lock"
    builder = subprocess.Popen(
        ["flock", str(lock), "sh", "-c", f"echo locked; sleep 1; touch {venv / STAMP_NAME}"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert builder.stdout.readline().strip() == "locked"
        assert not (venv / STAMP_NAME).exists()
        assert built_vllm_python(venv) == venv / "bin" / "python"
    finally:
        builder.wait(timeout=30)


def test_an_interpreter_without_the_builds_stamp_is_not_a_built_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("POLYREASON_VLLM_PYTHON", raising=False)
    venv = fake_venv(tmp_path)
    assert built_vllm_python(venv) is None
    (venv / STAMP_NAME).write_text("pins")
    assert built_vllm_python(venv) == venv / "bin" / "python"


def test_a_named_interpreter_is_taken_as_it_is(tmp_path, monkeypatch):
    python = tmp_path / "python"
    python.write_text("")
    monkeypatch.setenv("POLYREASON_VLLM_PYTHON", str(python))
    assert built_vllm_python(fake_venv(tmp_path)) == python
