"""Source problems: column mapping, bad rows reported by FILE:LINE, references, overlap refusal."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from components.config import load_profile_dict
from components.data.sources import extract_gold, load_references, load_source
from components.settings import BenchmarkSettings, DataSourceSettings, ProfileError
from components.settings.data import source_overlaps


def msvamp(shared_data, **extra):
    return DataSourceSettings(name="msvamp", path=str(shared_data / "msvamp" / "test_English.json"),
                              question_column="m_query", answer_column="response", **extra)


def test_msvamp_english_rows(shared_data, tmp_path):
    loaded = load_source(msvamp(shared_data, limit=3))
    assert [r["id"] for r in loaded.rows] == ["msvamp-00000", "msvamp-00001", "msvamp-00002"]
    assert loaded.rows[0]["gold"] == "8.0" and loaded.rows[0]["question"].startswith("julia played tag with 18 kids")
    assert loaded.problems == []


def test_bad_rows_are_reported_with_file_and_line_and_dropped(tmp_path):
    path = tmp_path / "src.jsonl"
    lines = [{"q": "ok 1", "a": "2"}, {"q": "no gold", "a": ""}, {"q": "bad gold", "a": "banana"},
             {"q": "", "a": "3"}, "{not json", {"q": "ok 2", "a": "\\frac{1}{2}"}]
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    loaded = load_source(DataSourceSettings(path=str(path), question_column="q", answer_column="a"))
    assert [r["question"] for r in loaded.rows] == ["ok 1", "ok 2"]
    assert [(p["location"].rsplit(":", 1)[1], p["reason"]) for p in loaded.problems] == [
        ("2", "missing_gold"), ("3", "unparseable_gold"), ("4", "missing_question"), ("5", "unreadable")]
    assert all(p["location"].startswith(str(path)) for p in loaded.problems)


def test_tsv_with_header_and_gsm8k_answer_regex(tmp_path):
    (tmp_path / "g.tsv").write_text("id\tquestion\tanswer\nx1\tHow many?\tShe has 3+4=7\\n#### 7\n")
    settings = DataSourceSettings(path=str(tmp_path / "g.tsv"), id_column="id", answer_regex=r"####\s*(.+)$")
    loaded = load_source(settings)
    assert loaded.rows == [{"id": "x1", "row": 0, "question": "How many?", "gold": "7", "source": "source"}]


def test_parquet_source(tmp_path):
    pd.DataFrame({"problem": ["A", "B"], "solution": ["1", "2"]}).to_parquet(tmp_path / "d.parquet")
    loaded = load_source(DataSourceSettings(path=str(tmp_path / "d.parquet"), question_column="problem",
                                            answer_column="solution"))
    assert [(r["question"], r["gold"]) for r in loaded.rows] == [("A", "1"), ("B", "2")]


def test_hub_source_keeps_the_dataset_name():
    settings = DataSourceSettings(hub="openai/gsm8k", hub_config="main", answer_regex=r"####\s*(.+)$")
    assert (settings.hub, settings.split) == ("openai/gsm8k", "train")
    with pytest.raises(ValueError, match="exactly one"):
        DataSourceSettings(hub="a/b", path="x.jsonl")


def test_msvamp_reference_translations_align_by_row(shared_data, tmp_path):
    settings = msvamp(shared_data, reference_path=str(shared_data / "msvamp" / "test_{language}.json"))
    refs = load_references(settings, ["fr", "ja", "te"])
    assert set(refs) == {"fr", "ja"} and len(refs["fr"]) == 1000  # MSVAMP has no Telugu
    assert refs["fr"][0].startswith("Julia a joué à chat avec 18 enfants")


@pytest.mark.parametrize(("raw", "regex", "gold"), [
    ("8.0", None, "8.0"), ("  ", None, None), (None, None, None), (7, None, "7"),
    ("steps\n#### 1,234", r"####\s*(.+)$", "1,234"), ("no marker", r"####\s*(.+)$", None),
])
def test_extract_gold(raw, regex, gold):
    assert extract_gold(raw, regex) == gold


def test_overlap_detection():
    src = DataSourceSettings(path="../shared/data/msvamp/test_English.json")
    assert source_overlaps(src, [BenchmarkSettings(name="msvamp"), BenchmarkSettings(name="mgsm")]) == ["msvamp"]
    assert source_overlaps(DataSourceSettings(hub="Mathoctopus/MSVAMP"), [BenchmarkSettings(name="msvamp")]) == ["msvamp"]
    assert source_overlaps(DataSourceSettings(path="x.jsonl", benchmark="mgsm"), [BenchmarkSettings(name="mgsm")]) == ["mgsm"]
    assert source_overlaps(DataSourceSettings(path="../shared/data/mgsm_rev2/x.tsv"), [BenchmarkSettings(name="mgsm")]) == []


def test_profile_with_msvamp_as_source_and_benchmark_is_refused():
    profile = {
        "name": "t",
        "evaluation": {"benchmarks": [{"name": "msvamp"}]},
        "data": {"source": {"path": "../shared/data/msvamp/test_English.json"}, "languages": ["fr"]},
    }
    with pytest.raises(ProfileError, match="'msvamp' is both the source of training queries and an evaluation"):
        load_profile_dict(profile)
    profile["evaluation"]["benchmarks"] = [{"name": "mgsm"}]
    assert load_profile_dict(profile).data.languages == ["fr"]
