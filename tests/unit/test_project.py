"""``Project.produce``: the work runs once per task key, a product is a file or a directory, and the layout is the
project's (``artifacts/<stage>/<fp[:12]>/``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.config import fingerprint
from runtime import artifacts
from runtime.artifacts import MANIFEST
from runtime.project import Made, Project


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setattr(artifacts, "cache_key", lambda: "key-1")  # every write belongs to one cached task
    return Project(str(tmp_path))


def counting(calls: list, name: str, rows: int = 2):
    def work(out: Path) -> dict:
        calls.append(out)
        (out / name).write_text("".join(json.dumps({"i": i}) + "\n" for i in range(rows)), encoding="utf-8")
        return {"rows": rows}

    return work


def test_the_work_runs_once_per_task_key(project, monkeypatch):
    calls: list = []
    first = project.produce("scores", ["fp", 1], "scores.jsonl", counting(calls, "scores.jsonl"))
    again = project.produce("scores", ["fp", 1], "scores.jsonl", counting(calls, "scores.jsonl"))
    assert first == again and len(calls) == 1
    assert Path(first.path) == Path(project.root) / "artifacts" / "scores" / fingerprint(["fp", 1])[:12] / "scores.jsonl"
    monkeypatch.setattr(artifacts, "cache_key", lambda: "key-2")  # the task's code changed
    project.produce("scores", ["fp", 1], "scores.jsonl", counting(calls, "scores.jsonl"))
    assert len(calls) == 2


@pytest.mark.parametrize("product, files, fingerprint_given, expected_files", [
    ("table.jsonl", None, None, ["table.jsonl"]),                       # a file: itself, its sha256
    (".", None, None, ["sub/a.txt", "table.jsonl"]),                    # a directory: every file under it
    ("sub", None, None, ["sub/a.txt"]),                                 # a sub-directory product
    (".", ["table.jsonl"], "given", ["table.jsonl"]),                   # the work names files and fingerprint
])
def test_what_a_product_is_made_of(project, product, files, fingerprint_given, expected_files):
    def work(out: Path) -> Made:
        (out / "sub").mkdir()
        (out / "sub" / "a.txt").write_text("a", encoding="utf-8")
        (out / "table.jsonl").write_text('{"i": 0}\n', encoding="utf-8")
        return Made(summary={"n": 1}, files=[out / f for f in files] if files else None, fingerprint=fingerprint_given)

    ref = project.produce("stage", "x", product, work)
    directory = project.directory("stage", "x")
    manifest = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    name = "." if product == "." else product
    assert sorted(manifest[name]["files"]) == expected_files and ref.summary == {"n": 1}
    if fingerprint_given:
        assert ref.fingerprint == "given"
    elif product == "table.jsonl":
        assert ref.fingerprint == manifest[name]["files"]["table.jsonl"]["sha256"]
    assert artifacts.problem(ref) is None
    (directory / expected_files[0]).write_text("changed", encoding="utf-8")  # checked against the manifest
    assert "manifest" in artifacts.problem(ref)


def test_a_project_is_a_path_and_keeps_its_cache_beside_the_artifacts(tmp_path):
    project = Project(str(tmp_path))
    assert Path(project) == tmp_path and project.cache_dir == tmp_path / ".cache"
