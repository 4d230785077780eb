"""A training run is identified by its task's whole key; a served model's vLLM is read from its own interpreter.

* ``training_run`` names the directory and the run key from the code digest the task's cache key holds: a
  declared library of the stage at another version (the version lookup patched, as an upgrade would change
  it) gives another directory and key, so the trainer starts from step 0 instead of resuming;
* the GRPO task's key covers vLLM (its rollouts on the GPU profiles), the generation's covers peft and
  tokenizers;
* ``server_python``'s vLLM version comes from that interpreter: the oracle is the ``*.dist-info`` directory
  of the vLLM distribution installed in that environment, read from disk, not through the code under test.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from components.settings import ModelSettings, SFTSettings
from components.training.runner import TrainingJob
from runtime.project import Project
from tests.helpers.vllm_env import built_vllm_python

REPO = Path(__file__).resolve().parents[2]
VLLM_VENV = REPO / ".venv-vllm"
VLLM_PYTHON = VLLM_VENV / "bin" / "python"


def patched_version(monkeypatch, distribution: str, version: str = "999.0") -> None:
    from runtime.cache import task_code

    installed = task_code.library_version
    monkeypatch.setattr(task_code, "library_version", lambda name: version if name == distribution else installed(name))


@pytest.mark.parametrize("distribution", ["trl", "peft", "tokenizers", "transformers"])
def test_another_library_version_is_another_training_run(tmp_path, monkeypatch, distribution):
    from runtime.processes.trainer import training_run
    from tasks.sft import sft_task

    job = TrainingJob(stage="sft", sft=SFTSettings(), model="m", dataset="d.parquet")
    keyed, out = training_run(Project(str(tmp_path)), job, sft_task, "model-fp", "data-fp")
    again, same = training_run(Project(str(tmp_path)), job, sft_task, "model-fp", "data-fp")
    assert (again.run_key, same) == (keyed.run_key, out)  # an unchanged re-run finds its run
    patched_version(monkeypatch, distribution)
    upgraded, other = training_run(Project(str(tmp_path)), job, sft_task, "model-fp", "data-fp")
    assert upgraded.run_key != keyed.run_key and other != out


@pytest.mark.parametrize("distribution, task, changes", [
    ("vllm", "grpo-train", True),  # GRPO's rollouts are vLLM's on the GPU profiles
    ("vllm", "sft-train", False),
    ("tokenizers", "grpo-train", True),
    ("peft", "generate", True),  # an adapter merged for generation
    ("tokenizers", "generate", True),
    ("tokenizers", "build-prompts", True),
])
def test_libraries_that_decide_output_are_in_the_key(monkeypatch, distribution, task, changes):
    from tasks import evaluation, grpo, sft

    tasks = {t.name: t for t in (evaluation.generate_task, evaluation.build_prompts_task, sft.sft_task,
                                 grpo.grpo_train_task)}

    def key() -> str:
        return tasks[task].cache_policy.inner.compute_key(SimpleNamespace(task=tasks[task]), {}, {})

    before = key()
    patched_version(monkeypatch, distribution)
    assert (key() != before) is changes


def installed_vllm(python: Path) -> str:
    """The version in the name of the vLLM ``*.dist-info`` directory of ``python``'s environment."""
    found = sorted((python.parent.parent / "lib").glob("python*/site-packages/vllm*.dist-info"))
    name, version = found[0].name.removesuffix(".dist-info").rsplit("-", 1)
    return f"{name.replace('_', '-')}=={version}" if name != "vllm" else version


def test_server_pythons_vllm_is_read_from_that_interpreter():
    from runtime.cache.server_libraries import ServerLibrariesKey, interpreter_version
    from runtime.cache.task_code import library_version

    if built_vllm_python(VLLM_VENV) is None:  # waits for a build in progress (CI starts one beside the suite)
        pytest.skip("no built .venv-vllm (bash .ci/vllm-env.sh builds it)")
    if not sorted((VLLM_PYTHON.parent.parent / "lib").glob("python*/site-packages/vllm*.dist-info")):
        pytest.skip(".venv-vllm has no vLLM installed")
    expected = installed_vllm(VLLM_PYTHON)
    assert interpreter_version(VLLM_PYTHON, "vllm") == expected
    here = interpreter_version(sys.executable, "vllm")
    assert here == library_version("vllm")  # this interpreter read both ways agrees
    assert here != expected  # the CPU test env has no vLLM (or another build) here

    def key(python: Path | None) -> str | None:
        model = ModelSettings(backend="vllm-server", model="m", server_python=str(python) if python else None)
        return ServerLibrariesKey().compute_key(None, {"evaluation": {"model": model}}, {})

    assert key(VLLM_PYTHON) == repr([(f"{VLLM_PYTHON}:vllm", expected)])
    assert key(Path(sys.executable)) != key(VLLM_PYTHON)
    assert key(None) is None  # served by this interpreter: its vLLM is already in the stage's libraries


def test_a_missing_server_python_is_named(tmp_path):
    from runtime.cache.server_libraries import interpreter_version

    with pytest.raises(FileNotFoundError, match="model.server_python: no interpreter at"):
        interpreter_version(tmp_path / "nope" / "python", "vllm")
