"""Resumable generation into JSONL: finished prompts are never generated twice; stop strings cut."""

from __future__ import annotations

import json

import pytest

from components.settings import ModelSettings, SamplingSettings
from components.generation.fake import FakeGenerator
from components.generation.resumable import generate_to_jsonl
from components.records import BenchmarkItem

ITEMS = [BenchmarkItem(str(i), "mgsm", "fr", f"question {i}", str(i)) for i in range(5)]
PROMPTS = [f"prompt {i}" for i in range(5)]
SAMPLING = SamplingSettings(n=2, batch_size=2)


def fake(tmp_path):
    return FakeGenerator(ModelSettings(backend="fake", model="fake"), tmp_path, progress=False)


def read(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_every_sample_is_a_row_in_prompt_order(tmp_path):
    out = tmp_path / "g.jsonl"
    summary = generate_to_jsonl(fake(tmp_path), ITEMS, PROMPTS, SAMPLING, out)
    rows = read(out)
    assert summary.rows == len(rows) == 10 and summary.prompts_generated == 5 and summary.prompts_resumed == 0
    assert [(r["prompt_index"], r["sample_index"]) for r in rows] == [(i, s) for i in range(5) for s in range(2)]
    assert not (tmp_path / "g.jsonl.partial").exists()


def test_an_interrupted_run_resumes_without_regenerating_finished_prompts(tmp_path):
    out = tmp_path / "g.jsonl"
    complete = tmp_path / "complete.jsonl"
    generate_to_jsonl(fake(tmp_path), ITEMS, PROMPTS, SAMPLING, complete)
    lines = complete.read_text().splitlines(keepends=True)
    # a killed run left prompts 0-1 written and a torn line of prompt 2
    (tmp_path / "g.jsonl.partial").write_text("".join(lines[:4]) + lines[4][:10])
    generator = fake(tmp_path)
    summary = generate_to_jsonl(generator, ITEMS, PROMPTS, SAMPLING, out)
    assert summary.prompts_resumed == 2 and summary.prompts_generated == 3
    assert generator.calls == 2  # prompts 2-4 in batches of two
    assert out.read_text() == complete.read_text()


def test_stop_strings_cut_the_completion(tmp_path):
    out = tmp_path / "g.jsonl"
    generate_to_jsonl(fake(tmp_path), ITEMS, PROMPTS, SAMPLING, out, stop=["The answer"])
    assert {r["completion"].endswith(".</think>") for r in read(out)} == {True}


def test_items_and_prompts_must_line_up(tmp_path):
    with pytest.raises(ValueError, match="5 items but 4 prompts"):
        generate_to_jsonl(fake(tmp_path), ITEMS, PROMPTS[:4], SAMPLING, tmp_path / "g.jsonl")


def test_journals_of_killed_processes_are_adopted_once_each(tmp_path):
    """Two killed runs left journals: rows seen twice are kept once, a half-written prompt is generated again."""
    out = tmp_path / "g.jsonl"
    complete = tmp_path / "complete.jsonl"
    generate_to_jsonl(fake(tmp_path), ITEMS, PROMPTS, SAMPLING, complete)
    lines = complete.read_text().splitlines(keepends=True)  # two rows (samples) per prompt
    (tmp_path / "g.jsonl.partial.111").write_text("".join(lines[:4]))                 # prompts 0-1
    (tmp_path / "g.jsonl.partial.222").write_text("".join(lines[2:6]) + lines[6])     # prompts 1-2, half of 3
    generator = fake(tmp_path)
    summary = generate_to_jsonl(generator, ITEMS, PROMPTS, SAMPLING, out)
    assert summary.prompts_resumed == 3 and summary.prompts_generated == 2 and summary.rows == 10
    assert out.read_text() == complete.read_text()
    assert list(tmp_path.glob("g.jsonl.partial*")) == []


def test_the_journal_is_per_process(tmp_path):
    import os

    class Stop(Exception):
        pass

    class Failing:
        def generate(self, prompts, sampling, stop=()):
            raise Stop

    with pytest.raises(Stop):
        generate_to_jsonl(Failing(), ITEMS, PROMPTS, SAMPLING, tmp_path / "g.jsonl")
    assert [p.name for p in tmp_path.glob("g.jsonl.partial*")] == [f"g.jsonl.partial.{os.getpid()}"]
    assert not (tmp_path / "g.jsonl").exists()  # no half file under the final name


def test_pooled_jobs_share_backend_calls_and_finish_like_separate_runs(tmp_path):
    from components.generation.resumable import GenerationJob, generate_into_journals

    other_items = [BenchmarkItem(f"m{i}", "msvamp", "ja", f"質問 {i}", str(i)) for i in range(3)]
    other_prompts = [f"質問 {i}" for i in range(3)]
    separate = {name: tmp_path / "separate" / f"{name}.jsonl" for name in ("a", "b")}
    separate["a"].parent.mkdir()
    generate_to_jsonl(fake(tmp_path), ITEMS, PROMPTS, SAMPLING, separate["a"])
    generate_to_jsonl(fake(tmp_path), other_items, other_prompts, SAMPLING, separate["b"])

    pooled = {name: tmp_path / f"{name}.jsonl" for name in ("a", "b")}
    generator = fake(tmp_path)
    wide = SAMPLING.model_copy(update={"batch_size": 8})
    jobs = [GenerationJob(ITEMS, PROMPTS, pooled["a"]), GenerationJob(other_items, other_prompts, pooled["b"])]
    results, backend = generate_into_journals(generator, jobs, wide)
    assert (generator.calls, generator.prompts_seen) == (1, 8)  # 5 + 3 prompts, one call
    assert [r.prompts_generated for r in results] == [5, 3]
    assert backend.first_call_at <= backend.last_return_at and backend.seconds >= 0
    assert not pooled["a"].exists()  # only journals: the file is finished by its own run below

    finisher = fake(tmp_path)
    summary = generate_to_jsonl(finisher, ITEMS, PROMPTS, wide, pooled["a"])
    generate_to_jsonl(finisher, other_items, other_prompts, wide, pooled["b"])
    assert finisher.calls == 0 and summary.prompts_resumed == 5 and summary.first_call_at is None
    for name in ("a", "b"):
        assert pooled[name].read_text() == separate[name].read_text()


def test_pooled_chunks_cross_job_boundaries_and_keep_finished_prompts(tmp_path):
    from components.generation.resumable import GenerationJob, generate_into_journals

    out_a, out_b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    generate_to_jsonl(fake(tmp_path), ITEMS[:2], PROMPTS[:2], SAMPLING, tmp_path / "done.jsonl")
    (tmp_path / "a.jsonl.partial").write_text((tmp_path / "done.jsonl").read_text())  # prompts 0-1 of a done
    generator = fake(tmp_path)
    jobs = [GenerationJob(ITEMS, PROMPTS, out_a), GenerationJob(ITEMS[:3], PROMPTS[:3], out_b)]
    results, _ = generate_into_journals(generator, jobs, SAMPLING.model_copy(update={"batch_size": 4}))
    assert [(r.prompts_resumed, r.prompts_generated) for r in results] == [(2, 3), (0, 3)]
    assert (generator.calls, generator.prompts_seen) == (2, 6)  # 3 of a + 1 of b, then 2 of b
    assert len(read(results[1].journal)) == 6


def test_a_job_with_mismatched_items_and_prompts_names_its_file(tmp_path):
    from components.generation.resumable import GenerationJob

    with pytest.raises(ValueError, match="x.jsonl: 5 items but 4 prompts"):
        GenerationJob(ITEMS, PROMPTS[:4], tmp_path / "x.jsonl")
