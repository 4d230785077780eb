"""Artifact directories: one writer at a time, products published with row counts and checksums, and a
result whose files changed is never taken for whole."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from runtime import artifacts
from runtime.artifacts import MANIFEST, Slot, in_progress, problem, writing
from runtime.artifacts import ArtifactRef

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def same_task(monkeypatch):
    """Every write in the test belongs to one cached task (one cache key)."""
    monkeypatch.setattr(artifacts, "cache_key", lambda: "key-1")


def jsonl(path: Path, rows: int) -> Path:
    path.write_text("".join(json.dumps({"i": i}) + "\n" for i in range(rows)), encoding="utf-8")
    return path


def published(directory: Path, rows: int = 3) -> ArtifactRef:
    with writing(directory) as slot:
        return slot.publish(jsonl(directory / "g.jsonl", rows), {"rows": rows})


def test_a_published_product_is_reused_whole(tmp_path, same_task):
    ref = published(tmp_path / "a")
    assert problem(ref) is None
    with writing(tmp_path / "a") as slot:
        assert slot.reuse(tmp_path / "a" / "g.jsonl") == ref
    manifest = json.loads((tmp_path / "a" / MANIFEST).read_text())
    assert manifest["g.jsonl"]["files"]["g.jsonl"]["rows"] == 3 and manifest["g.jsonl"]["key"] == "key-1"


def test_a_product_of_another_task_key_is_written_again(tmp_path, monkeypatch, same_task):
    published(tmp_path / "a")
    monkeypatch.setattr(artifacts, "cache_key", lambda: "key-2")  # the scorer's source changed, say
    with writing(tmp_path / "a") as slot:
        assert slot.reuse(tmp_path / "a" / "g.jsonl") is None


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (lambda p: jsonl(p, 2), "has 2 rows, its manifest says 3"),
        (lambda p: p.write_text(p.read_text().replace('"i": 1', '"i": 7')), "does not match its manifest's sha256"),
        (lambda p: p.write_text(p.read_text() + " "), "bytes, its manifest says"),
        (lambda p: p.unlink(), "is missing"),
    ],
    ids=["rows", "checksum", "size", "missing"],
)
def test_a_changed_product_is_named_and_not_reused(tmp_path, same_task, damage, expected):
    ref = published(tmp_path / "a")
    damage(tmp_path / "a" / "g.jsonl")
    assert expected in problem(ref)
    with writing(tmp_path / "a") as slot:
        assert slot.reuse(tmp_path / "a" / "g.jsonl") is None


def test_a_result_recorded_before_a_rewrite_is_stale(tmp_path, same_task):
    old = published(tmp_path / "a", rows=3)
    published(tmp_path / "a", rows=4)  # written again (e.g. by other code): the old record points at old content
    assert "rewritten" in problem(old)


def test_without_a_manifest_the_row_count_of_the_summary_is_checked(tmp_path):
    path = jsonl(tmp_path / "legacy.jsonl", 4)
    assert problem(ArtifactRef(str(path), "f" * 64, {"rows": 4})) is None
    assert "has 4 rows, its cache entry recorded 160" in problem(ArtifactRef(str(path), "f" * 64, {"rows": 160}))
    assert "is missing" in problem(ArtifactRef(str(tmp_path / "gone.jsonl"), "f" * 64, {}))


def test_a_second_writer_waits_for_the_first_and_reuses_its_product(tmp_path, same_task):
    directory = tmp_path / "a"
    inside = threading.Event()

    def first() -> None:
        with writing(directory) as slot:
            inside.set()
            time.sleep(0.5)
            slot.publish(jsonl(directory / "g.jsonl", 5), {"rows": 5})

    thread = threading.Thread(target=first)
    thread.start()
    inside.wait()
    start = time.monotonic()
    with writing(directory) as slot:
        waited = time.monotonic() - start
        reused = slot.reuse(directory / "g.jsonl")
    thread.join()
    assert waited >= 0.3
    assert reused is not None and reused.summary == {"rows": 5}


def test_a_killed_writer_leaves_no_stale_lock(tmp_path):
    directory = tmp_path / "a"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from runtime.artifacts import writing\n"
         "with writing(sys.argv[1]):\n    print('held', flush=True); time.sleep(60)", str(directory)],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    start = time.monotonic()
    with writing(directory):  # a stale lock would wait for the holder's 60 s or for ever; 30 s is load, not a wait
        assert time.monotonic() - start < 30


def test_what_is_being_written_is_listed_with_its_progress(tmp_path):
    with writing(tmp_path / "a", progress=lambda: "40 of 160 rows kept"):
        with writing(tmp_path / "a"):  # re-entrant in one thread
            assert in_progress() == [f"{(tmp_path / 'a').resolve()} (40 of 160 rows kept)"]
    assert in_progress() == []


def test_a_directory_product_lists_its_files(tmp_path, same_task):
    out = tmp_path / "run"
    (out / "adapter").mkdir(parents=True)
    (out / "adapter" / "w.safetensors").write_bytes(b"123")
    (out / "result.json").write_text("{}")
    with writing(out) as slot:
        ref = slot.publish(out, {"steps": 2}, files=[out / "adapter" / "w.safetensors", out / "result.json"],
                           fingerprint="abc")
    assert isinstance(slot, Slot) and ref.path == str(out.resolve()) and problem(ref) is None
    (out / "adapter" / "w.safetensors").write_bytes(b"124")
    assert "sha256" in problem(ref)
