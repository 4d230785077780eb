"""Teacher traces written beforehand, read instead of generated (the data stage's ``traces.from_file``).

Two formats:

* JSON Lines, one trace per row: ``id``, ``lang``, ``question``, ``gold``,
  ``completion`` (a completion in the SFT form ``<think>T</think>R`` or free text;
  the trace filter decides). A bad row is reported as ``FILE:LINE: field F: …``
  and skipped.
* MGSM's ``exemplars.json`` (``{"number_answers": [...], "exemplars": {lang:
  {"1": {"q", "a"}, ...}}}``): the eight chain-of-thought exemplars of Shi et al.
  (2022) in every MGSM language. Each becomes a trace in the SFT form: the
  localized "Question:" label is dropped from the question, the step-by-step
  answer (without its label) goes inside ``<think>…</think>``, and the response
  states the gold in ``\\boxed{}`` — the format the trace filter and the rewards
  expect. Ids are ``mgsm-exemplar-<n>``, shared across languages. With
  ``trace_language`` every question gets the trace of the same exemplar in that
  language (the exemplars are translations of one another, so the steps and the
  gold still fit the question).

>>> trace_from_exemplar("Réponse étape par étape : 5 + 6 = 11. La réponse est 11.", "11")
'<think>\\n5 + 6 = 11. La réponse est 11.\\n</think>\\n\\n\\\\boxed{11}'
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from components.data.loaders_local import read_lines

FIELDS = ("id", "lang", "question", "gold", "completion")
LABEL = re.compile(r"^[^:：]{1,40}[:：]\s*")  # "Question :", "Step-by-Step Answer:", "質問：" …


def strip_label(text: str) -> str:
    """The text without its leading localized label (``Question :``, ``ステップごとの答え：`` …).

    >>> strip_label("Question : Roger a 5 balles.")
    'Roger a 5 balles.'
    """
    return LABEL.sub("", text.strip(), count=1)


def trace_from_exemplar(answer: str, gold: str) -> str:
    """An exemplar's step-by-step answer as ``<think>steps</think>`` and a boxed gold."""
    return f"<think>\n{strip_label(answer)}\n</think>\n\n\\boxed{{{gold}}}"


def read_exemplars(path: Path, languages: list[str], trace_language: str | None = None) -> list[dict[str, Any]]:
    """Traces from MGSM's ``exemplars.json`` for ``languages`` (languages it lacks are skipped); with
    ``trace_language``, each trace is that language's version of the exemplar (``ValueError`` if absent)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    golds = [str(answer) for answer in data["number_answers"]]
    if trace_language is not None and trace_language not in data["exemplars"]:
        raise ValueError(f"{path}: field 'exemplars': no exemplars in trace language {trace_language!r} "
                         f"(has: {', '.join(sorted(data['exemplars']))})")
    answers = data["exemplars"].get(trace_language, {})
    rows = []
    for lang in languages:
        for key, exemplar in sorted(data["exemplars"].get(lang, {}).items(), key=lambda kv: int(kv[0])):
            gold = golds[int(key) - 1]
            answer = answers[key]["a"] if trace_language is not None else exemplar["a"]
            rows.append({"id": f"mgsm-exemplar-{key}", "lang": lang, "question": strip_label(exemplar["q"]),
                         "gold": gold, "completion": trace_from_exemplar(answer, gold)})
    return rows


def read_trace_rows(path: Path, languages: list[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows of a JSONL traces file in ``languages``, and the problems of the rows that were skipped."""
    rows, problems = [], []
    for number, line, undecodable in read_lines(path):  # one line at a time: a bad byte costs its row
        if not line.strip():
            continue
        if undecodable:
            problems.append(f"{path}:{number}: {undecodable}")
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            problems.append(f"{path}:{number}: not valid JSON ({error.msg})")
            continue
        missing = [field for field in FIELDS if not isinstance(row, dict) or row.get(field) in (None, "")]
        if missing:
            problems.append(f"{path}:{number}: field {missing[0]!r}: missing or empty")
        elif row["lang"] in languages:
            rows.append({field: str(row[field]) for field in FIELDS})
    return rows, problems


def read_teacher_file(path: str | Path, languages: list[str],
                      trace_language: str | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    """Traces of ``path`` (exemplars JSON or JSONL) in ``languages``, and the problems of skipped rows;
    ``trace_language`` applies to exemplars only."""
    path = Path(path)
    if path.suffix == ".json":
        return read_exemplars(path, languages, trace_language), []
    return read_trace_rows(path, languages)
