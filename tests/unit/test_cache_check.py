"""A cached task result is reused only while the files it points at still hold what it recorded."""

from __future__ import annotations

import json

from runtime import artifacts
from runtime.artifacts import ArtifactRef
from runtime.cache.policy import artifact_refs, expire_if_stale


def test_refs_are_found_anywhere_in_a_result():
    ref = ArtifactRef("/p", "f", {})
    assert artifact_refs({"a": [ref, {"b": (ref,)}], "c": 3}) == [ref, ref]


def test_a_stale_result_is_expired_and_a_whole_one_kept(tmp_path, monkeypatch):
    from prefect.filesystems import LocalFileSystem
    from prefect.results import ResultStore

    monkeypatch.setattr(artifacts, "cache_key", lambda: "k")
    store = ResultStore(result_storage=LocalFileSystem(basepath=str(tmp_path / "results")))
    monkeypatch.setattr("prefect.results.get_result_store", lambda: store)
    out = tmp_path / "gen"
    with artifacts.writing(out) as slot:
        (out / "g.jsonl").write_text("".join(json.dumps({"i": i}) + "\n" for i in range(3)))
        ref = slot.publish(out / "g.jsonl", {"rows": 3})
    store.write({"generations": ref}, key="whole")
    store.write(ref, key="stale")
    assert expire_if_stale("whole", "generate") is None and store.exists("whole")

    (out / "g.jsonl").write_text('{"i": 0}\n')  # another run cut it short
    assert "has 1 rows, its manifest says 3" in expire_if_stale("stale", "generate")
    assert not store.exists("stale")
