"""One byte that is not UTF-8 costs its row: every reader of benchmark and input files loads the other rows and
names the file, line and field of the bad one (the expected lines are written out by hand)."""

from __future__ import annotations

import gzip
import json

from components.data.benchmarks import load_benchmark
from components.data.loaders_local import read_json_array
from components.data.sources import load_source
from components.data.teacher_file import read_trace_rows
from components.settings import DataSourceSettings

BAD = b"\xff"


def load(name, data_dir, languages):
    return load_benchmark(name, data_dir=str(data_dir), languages=languages, limit=None)


def test_a_bad_byte_in_an_mgsm_tsv_costs_its_row_and_names_file_line_and_column(tmp_path):
    lines = [f"What is {i} plus {i}?\t{2 * i}".encode() for i in range(6)]
    lines[2] = b"What is 2 plus " + BAD + b"2?\t4"
    (tmp_path / "mgsm_en.tsv").write_bytes(b"\n".join(lines) + b"\n")
    (tmp_path / "mgsm_fr.tsv").write_bytes(b"\xef\xbb\xbfQuel est 1 plus 1 ?\t2\n")  # a byte-order mark is no text
    result = load("mgsm", tmp_path, ["en", "fr"])
    assert [(item.id, item.lang) for item in result.items] == [
        ("mgsm-0", "en"), ("mgsm-1", "en"), ("mgsm-3", "en"), ("mgsm-4", "en"), ("mgsm-5", "en"), ("mgsm-0", "fr")]
    assert result.items[-1].question == "Quel est 1 plus 1 ?"
    assert result.errors == [f"{tmp_path / 'mgsm_en.tsv'}:3: field question: not UTF-8 text (byte 0xff at column 16)"]


def test_a_bad_byte_in_the_answer_column_names_that_column(tmp_path):
    (tmp_path / "mgsm_en.tsv").write_bytes(b"q one\t1\nq two\t2" + BAD + b"\n")
    result = load("mgsm", tmp_path, ["en"])
    assert [item.id for item in result.items] == ["mgsm-0"]
    assert result.errors == [f"{tmp_path / 'mgsm_en.tsv'}:2: field answer: not UTF-8 text (byte 0xff at column 8)"]


def test_a_bad_byte_in_a_jsonl_benchmark_names_the_key_that_holds_it(tmp_path):
    rows = [json.dumps({"m_query": f"q{i}", "response": f"{i}.0"}).encode() for i in range(3)]
    rows[1] = rows[1].replace(b'"q1"', b'"q' + BAD + b'"')
    (tmp_path / "test_English.json").write_bytes(b"\n".join(rows) + b"\n")
    result = load("msvamp", tmp_path, ["en"])
    assert [item.gold for item in result.items] == ["0", "2"]
    assert result.errors == [f"{tmp_path / 'test_English.json'}:2: field m_query: not UTF-8 text "
                             "(byte 0xff at column 15)"]


def test_a_bad_byte_outside_any_string_is_a_json_error_of_its_line(tmp_path):
    (tmp_path / "test_English.json").write_bytes(b'{"m_query": "q", "response": "1"}\n{' + BAD + b'}\n')
    result = load("msvamp", tmp_path, ["en"])
    assert len(result.items) == 1
    assert result.errors == [f"{tmp_path / 'test_English.json'}:2: field json: not UTF-8 text (byte 0xff at column 2)"]


def test_a_bad_byte_in_a_json_array_costs_the_element_that_holds_it(tmp_path):
    path = tmp_path / "en.json"
    elements = [json.dumps({"question": f"q{i}", "answer": str(i), "data_source": "MATH500"}) for i in range(3)]
    path.write_bytes(("[\n" + ",\n".join(elements) + "\n]\n").encode().replace(b'"1"', b'"1' + BAD + b'"'))
    assert [(loc.rsplit(":", 1)[1], rec if isinstance(rec, dict) else (rec.field, rec.problem))
            for loc, rec in read_json_array(path)] == [
        ("2", {"question": "q0", "answer": "0", "data_source": "MATH500"}), ("3", ("answer", "not UTF-8 text")),
        ("4", {"question": "q2", "answer": "2", "data_source": "MATH500"})]


def test_a_bad_byte_in_a_gzipped_qa_benchmark_costs_its_row(tmp_path):
    good = {"example_id": 7, "queries": {"en": "Capital of Japan?"}, "answers": {"en": [{"text": "Tokyo"}]}}
    bad = json.dumps({**good, "example_id": 8}).encode().replace(b"Japan", b"Jap" + BAD)
    with gzip.open(tmp_path / "mkqa.jsonl.gz", "wb") as handle:
        handle.write(json.dumps(good).encode() + b"\n" + bad + b"\n")
    result = load("mkqa", tmp_path, ["en"])
    assert [item.id for item in result.items] == ["mkqa-7"]
    assert result.errors == [f"{tmp_path / 'mkqa.jsonl.gz'}:2: field queries: not UTF-8 text (byte 0xff at column 52)"]


def test_a_bad_byte_in_a_csv_source_costs_its_row(tmp_path):
    path = tmp_path / "source.csv"
    path.write_bytes(b"question,answer\nq one,1\nq " + BAD + b",2\nq three,3\n")
    loaded = load_source(DataSourceSettings(name="s", path=str(path), question_column="question",
                                            answer_column="answer"), gold_ok=lambda gold: True)
    assert [row["gold"] for row in loaded.rows] == ["1", "3"]
    assert loaded.problems == [{"location": f"{path}:3", "row": 1, "reason": "unreadable",
                                "detail": "question: not UTF-8 text"}]


def test_a_bad_byte_in_a_teacher_file_costs_its_row(tmp_path):
    path = tmp_path / "traces.jsonl"
    row = {"id": "a", "lang": "fr", "question": "q", "gold": "1", "completion": "c"}
    path.write_bytes(json.dumps(row).encode() + b"\n" + json.dumps(row).encode().replace(b'"c"', b'"' + BAD + b'"')
                     + b"\n")
    rows, problems = read_trace_rows(path, ["fr"])
    assert rows == [row]
    assert problems == [f"{path}:2: not UTF-8 text (byte 0xff at column 72)"]
