"""Open-domain QA benchmarks: MKQA and XOR-TyDi local layouts, the packaged offline set, bad rows."""

from __future__ import annotations

import json

import pytest

from components.data.benchmarks import load_benchmark

MKQA = [
    {"example_id": 7, "queries": {"en": "capital of japan", "zh_cn": "日本的首都", "fr": "capitale du Japon"},
     "answers": {"en": [{"type": "entity", "text": "Tokyo", "aliases": ["Tōkyō"]}],
                 "zh_cn": [{"type": "entity", "text": "东京", "aliases": []}],
                 "fr": [{"type": "entity", "text": "Tokyo", "aliases": None}]}},
    {"example_id": 8, "queries": {"en": "why is the sky blue", "fr": "pourquoi le ciel est bleu"},
     "answers": {"en": [{"type": "long_answer", "text": None}], "fr": [{"type": "long_answer", "text": None}]}},
    {"example_id": 9, "queries": {"en": ""}, "answers": {"en": [{"type": "number", "text": "3"}]}},
]


def test_mkqa_local_copy(tmp_path):
    lines = [json.dumps(r, ensure_ascii=False) for r in MKQA] + ["{broken"]
    (tmp_path / "mkqa.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = load_benchmark("mkqa", data_dir=str(tmp_path), languages=["en", "zh"], limit=None)
    assert [(i.id, i.lang, i.gold, i.answers) for i in result.items] == [
        ("mkqa-7", "en", "Tokyo", ("Tokyo", "Tōkyō")), ("mkqa-7", "zh", "东京", ("东京",))]
    assert result.errors == [f"{tmp_path / 'mkqa.jsonl'}:3: field question: missing or empty",
                             f"{tmp_path / 'mkqa.jsonl'}:4: field json: not valid JSON "
                             "(Expecting property name enclosed in double quotes at column 2)"]


def test_xor_tydi_local_copy(tmp_path):
    rows = [{"id": "a1", "lang": "ja", "question": "フィンランドの首都は？", "answers": '["ヘルシンキ"]'},
            {"id": "a2", "lang": 3, "question": "日本の首都は？", "answers": ["東京"]},        # ClassLabel index: ja
            {"id": "a3", "lang": "fi", "question": "Mikä on Suomen pääkaupunki?", "answers": ["Helsinki"]}]
    (tmp_path / "xor_dev_full_v1_1.jsonl").write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows))
    result = load_benchmark("xor_tydi", data_dir=str(tmp_path), languages=["ja"], limit=None)
    assert [(i.id, i.gold) for i in result.items] == [("xor_tydi-a1", "ヘルシンキ"), ("xor_tydi-a2", "東京")]


def test_offline_set_is_parallel_across_six_languages():
    result = load_benchmark("offline_qa", data_dir=None, languages=[], limit=None)
    assert not result.errors and len(result.items) == 144
    by_id = {}
    for item in result.items:
        by_id.setdefault(item.id, set()).add(item.lang)
    assert len(by_id) == 24 and all(langs == {"en", "fr", "de", "es", "ja", "zh"} for langs in by_id.values())
    with pytest.raises(ValueError, match="unknown language"):
        load_benchmark("offline_qa", data_dir=None, languages=["th"], limit=None)


def test_every_qa_language_has_a_name_for_the_search_instruction():
    from components.data.benchmarks import BENCHMARKS
    from components.language import LANGUAGE_NAMES

    qa = [spec for spec in BENCHMARKS.values() if spec.kind == "qa"]
    missing = sorted({lang for spec in qa for lang in spec.languages(None)} - set(LANGUAGE_NAMES))
    assert missing == []
