"""Benchmark loaders: offline copies, malformed rows, language/limit selection, the hub path."""

from __future__ import annotations

import inspect
import json
import sys
import types

import pytest

from components.data.benchmarks import BENCHMARKS, LoadResult, load_benchmark, parse_number_gold
from components.records import BenchmarkItem


def load(name, data_dir, languages=(), limit=None, selection="first", seed=0) -> LoadResult:
    return load_benchmark(name, data_dir=str(data_dir) if data_dir else None, languages=list(languages),
                          limit=limit, selection=selection, sample_seed=seed)


# ---------------------------------------------------------------- registry contract


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_every_loader_takes_the_same_explicit_keywords(name):
    params = inspect.signature(BENCHMARKS[name].load).parameters
    assert list(params) == ["data_dir", "languages", "limit", "selection", "sample_seed", "hub_languages", "offset"]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params.values())


def test_unknown_benchmark_names_the_known_ones():
    with pytest.raises(ValueError, match="mgsm_rev2.*mmath|mmath.*mgsm_rev2"):
        load("gsm9k", None)


# ---------------------------------------------------------------- the offline copies


def test_mgsm_reads_all_languages_and_strips_thousands_commas(shared_data):
    result = load("mgsm", shared_data / "mgsm")
    assert result.errors == []
    assert len(result.items) == 2750
    en = [i for i in result.items if i.lang == "en"]
    assert en[0] == BenchmarkItem("mgsm-0", "mgsm", "en", en[0].question, "18")
    assert en[0].question.startswith("Janet’s ducks lay 16 eggs")
    assert [en[i].gold for i in (146, 201, 230, 249)] == ["2125", "114200", "276000", "5600"]


def test_mgsm_keeps_literal_quotes_and_shares_ids_across_languages(shared_data):
    result = load("mgsm", shared_data / "mgsm", ["es", "ja"])
    es = [i for i in result.items if i.lang == "es"]
    ja = [i for i in result.items if i.lang == "ja"]
    assert '"Todo por un dólar"' in es[213].question
    assert [i.id for i in es] == [i.id for i in ja]
    assert [i.gold for i in es] == [i.gold for i in ja]


def test_mgsm_rev2_has_its_own_ids(shared_data):
    result = load("mgsm_rev2", shared_data / "mgsm_rev2", ["fr"], limit=2)
    assert [(i.id, i.benchmark, i.lang, i.gold) for i in result.items] == [
        ("mgsm_rev2-0", "mgsm_rev2", "fr", "18"), ("mgsm_rev2-1", "mgsm_rev2", "fr", "3")]


def test_msvamp_reads_json_lines_and_turns_float_answers_into_integers(shared_data):
    result = load("msvamp", shared_data / "msvamp", ["fr", "en"], limit=2)
    assert result.errors == []
    assert [(i.id, i.lang, i.gold) for i in result.items] == [
        ("msvamp-0", "fr", "8"), ("msvamp-1", "fr", "1"), ("msvamp-0", "en", "8"), ("msvamp-1", "en", "1")]
    assert result.items[0].question.startswith("Julia a joué à chat avec 18 enfants")


def test_mmath_keeps_the_source_and_uses_gid(shared_data):
    result = load("mmath", shared_data / "mmath", ["ja"])
    assert len(result.items) == 374
    first = result.items[0]
    assert (first.id, first.gold, first.source) == ("mmath-0", "204", "AIME2024")
    counts = {}
    for item in result.items:
        counts[item.source] = counts.get(item.source, 0) + 1
    assert counts == {"MATH500": 311, "AIME2024": 30, "CNMO": 18, "AIME2025": 15}


def test_unknown_language_lists_the_available_ones(shared_data):
    with pytest.raises(ValueError, match=r"unknown language\(s\) pt .*available: bn, de, en, es, fr, ja, ru, sw, te, th, zh"):
        load("mgsm", shared_data / "mgsm", ["en", "pt"])


def test_sample_selection_is_seeded_and_the_same_in_every_language(shared_data):
    a = load("mgsm", shared_data / "mgsm", ["en", "th"], limit=5, selection="sample", seed=7)
    again = load("mgsm", shared_data / "mgsm", ["en", "th"], limit=5, selection="sample", seed=7)
    other = load("mgsm", shared_data / "mgsm", ["en"], limit=5, selection="sample", seed=8)
    en = [i.id for i in a.items if i.lang == "en"]
    th = [i.id for i in a.items if i.lang == "th"]
    assert len(en) == 5 and en == th
    assert en == [i.id for i in again.items if i.lang == "en"]
    assert en != [i.id for i in other.items]
    assert en == sorted(en, key=lambda x: int(x.split("-")[1]))  # file order kept


# ---------------------------------------------------------------- malformed rows


def test_bad_tsv_rows_are_reported_with_file_and_line_and_skipped(tmp_path):
    path = tmp_path / "mgsm_en.tsv"
    path.write_text("Q one\t1,000\nQ two\t2\tx\nQ three\t\nQ four\tfour\n\t5\nQ six\t6\n", encoding="utf-8")
    result = load("mgsm", tmp_path, ["en"])
    assert [(i.id, i.gold) for i in result.items] == [("mgsm-0", "1000"), ("mgsm-5", "6")]
    assert result.errors == [
        f"{path}:2: field columns: expected 2 tab-separated columns, got 3",
        f"{path}:3: field answer: empty",
        f"{path}:4: field answer: not a number: 'four'",
        f"{path}:5: field question: empty",
    ]


def test_bad_json_lines_are_reported_and_the_rest_load(tmp_path):
    path = tmp_path / "test_French.json"
    rows = [json.dumps({"m_query": "Q1", "response": "3.0"}), "{not json", json.dumps({"m_query": "Q3"}),
            json.dumps({"m_query": "Q4", "response": "2.5"})]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    result = load("msvamp", tmp_path)
    assert [(i.id, i.lang, i.gold) for i in result.items] == [("msvamp-0", "fr", "3"), ("msvamp-3", "fr", "2.5")]
    assert len(result.errors) == 2
    assert result.errors[0].startswith(f"{path}:2: field json: not valid JSON")
    assert result.errors[1] == f"{path}:3: field response: missing"


def test_json_array_elements_are_located_by_line(tmp_path):
    path = tmp_path / "fr.json"
    good = {"question": "Q", "answer": "1", "data_source": "MATH500", "gid": 0}
    path.write_text(
        "[\n" + json.dumps(good) + ",\n" + json.dumps({"question": "Q2", "data_source": "CNMO", "gid": 1}) + "\n]",
        encoding="utf-8",
    )
    result = load("mmath", tmp_path)
    assert [(i.id, i.source) for i in result.items] == [("mmath-0", "MATH500")]
    assert result.errors == [f"{path}:3: field answer: missing"]


def test_a_broken_json_array_keeps_what_was_read(tmp_path):
    path = tmp_path / "en.json"
    good = {"question": "Q", "answer": "1", "data_source": "AIME2024", "gid": 5}
    path.write_text("[\n" + json.dumps(good) + ",\n{\"question\": oops}\n]", encoding="utf-8")
    result = load("mmath", tmp_path)
    assert [i.id for i in result.items] == ["mmath-5"]
    assert len(result.errors) == 1 and result.errors[0].startswith(f"{path}:3: field json: not valid JSON")


# ---------------------------------------------------------------- MMLU-ProX (rows written here in its format)


def _prox_row(qid, category, answer, options, answer_index=None):
    row = {"question_id": qid, "question": f"Question {qid}?", "answer": answer,
           "answer_index": answer_index if answer_index is not None else "ABCDEFGHIJ".find(answer or "?"),
           "cot_content": "", "category": category, "src": "ori_mmlu-high_school_mathematics"}
    for index in range(10):
        row[f"option_{index}"] = options[index] if index < len(options) else "N/A"
    return row


def test_mmlu_prox_keeps_math_rows_with_options_and_letter_gold(tmp_path):
    rows = [
        _prox_row(70, "math", "B", ["1", "2", "3", "4"]),
        _prox_row(71, "physics", "A", ["x", "y"]),
        _prox_row(72, "math", "E", ["1", "2", "3"]),  # letter outside the options
        _prox_row(73, "math", None, ["a", "b", "c"], answer_index=2),
    ]
    path = tmp_path / "fr.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    result = load("mmlu_prox_math", tmp_path, ["fr"])
    assert [(i.id, i.gold, i.options) for i in result.items] == [
        ("mmlu_prox_math-70", "B", ("1", "2", "3", "4")), ("mmlu_prox_math-73", "C", ("a", "b", "c"))]
    assert result.errors == [f"{path}:3: field answer: 'E' is not one of ABC"]


def test_mmlu_prox_reads_parquet_in_a_language_folder(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "ja").mkdir()
    rows = [_prox_row(1, "math", "A", ["9", "8"]), _prox_row(2, "law", "A", ["p", "q"])]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "ja" / "test-00000-of-00001.parquet")
    result = load("mmlu_prox_math", tmp_path)
    assert [(i.id, i.lang, i.question, i.gold, i.options) for i in result.items] == [
        ("mmlu_prox_math-1", "ja", "Question 1?", "A", ("9", "8"))]


# ---------------------------------------------------------------- the hub path (datasets.load_dataset stubbed)


def test_without_data_dir_the_hub_dataset_is_read(monkeypatch):
    calls = []

    def fake_load_dataset(repo, config=None, split=None, data_files=None):
        calls.append((repo, config, split, data_files))
        return [{"question": "Q?", "answer": None, "answer_number": 1200, "equation_solution": None}]

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=fake_load_dataset))
    result = load("mgsm", None, ["de"])
    assert calls == [("juletxara/mgsm", "de", "test", None)]
    assert [(i.id, i.lang, i.gold) for i in result.items] == [("mgsm-0", "de", "1200")]


def stub_hub(monkeypatch) -> list:
    calls = []

    def fake_load_dataset(repo, config=None, split=None, data_files=None):
        calls.append((repo, config, split))
        return [{"question": f"{repo} {config}", "answer": None, "answer_number": 7, "equation_solution": None}]

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=fake_load_dataset))
    return calls


def test_hub_languages_come_from_the_hub_and_the_rest_from_data_dir(monkeypatch, shared_data):
    calls = stub_hub(monkeypatch)
    result = load_benchmark("mgsm_rev2", data_dir=str(shared_data / "mgsm_rev2"), languages=["fr", "ko"], limit=2,
                            hub_languages=["ko"])
    assert calls == [("freewheelin/mgsm_ko", None, "test")]  # Korean: not in MGSM-Rev2, a stand-in repository
    assert [(i.lang, i.gold) for i in result.items] == [("fr", "18"), ("fr", "3"), ("ko", "7")]
    assert result.items[0].question == load("mgsm_rev2", shared_data / "mgsm_rev2", ["fr"], limit=1).items[0].question


def test_mgsm_rev2_without_data_dir_reads_its_hub_copy(monkeypatch):
    calls = stub_hub(monkeypatch)
    load("mgsm_rev2", None, ["en"])
    assert calls == [("lightonai/mgsm-rev2", "en", "test")]


def test_a_hub_language_the_hub_lacks_is_refused(shared_data):
    with pytest.raises(ValueError, match=r"msvamp: unknown language\(s\) ko in the Hugging Face hub"):
        load_benchmark("msvamp", data_dir=str(shared_data / "msvamp"), languages=["fr", "ko"], limit=1,
                       hub_languages=["ko"])


def test_hub_languages_settings_rules():
    from components.settings import BenchmarkSettings

    with pytest.raises(ValueError, match="without data_dir every language is read from the hub"):
        BenchmarkSettings(name="mgsm_rev2", languages=["ko"], hub_languages=["ko"])
    with pytest.raises(ValueError, match="must also be listed in languages"):
        BenchmarkSettings(name="mgsm_rev2", data_dir="d", languages=["fr"], hub_languages=["ko"])


@pytest.mark.parametrize("text, gold", [("18", "18"), ("2,125", "2125"), ("8.0", "8"), (" 2.50 ", "2.50"), ("-3", "-3")])
def test_parse_number_gold(text, gold):
    assert parse_number_gold(text) == gold
