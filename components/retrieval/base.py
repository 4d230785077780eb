"""Passages, corpora and the hierarchical multilingual search of LcRL ("Hierarchical multi-round retrieval").

A corpus is a JSONL file of passages ``{"id", "lang", "title", "text"}``; every
language gets its own index, as in LcRL's released setup (one Wikipedia index per
language), so "search in language L" means "search L's index". A malformed line
is reported as ``FILE:LINE: field F: problem`` and skipped.

LcRL searches in rounds: the first search of a rollout goes to the query's own
language (culture-bound evidence, no conflicting sources yet), the second to
every *other* language (cross-lingual complements), the third and later ones to
a high-resource anchor (English). ``round_languages`` reads that plan from
settings: ``rounds[k]`` holds words (``query``, ``others``, ``all``) or ISO codes
for the (k+1)-th search, the last entry repeating. ``format_information``
renders the passages the policy sees between ``<information>`` tags; each
passage is cut to ``passage_chars`` characters (the released code: 200).

>>> round_languages([["query"], ["others"], ["en"]], 1, "fr", ["en", "fr", "ja"])
['en', 'ja']
>>> round_languages([["query"], ["others"], ["en"]], 5, "fr", ["en", "fr", "ja"])
['en']
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, Sequence


@dataclass(frozen=True)
class Passage:
    """One retrievable passage in one language; ``score`` is set on retrieval."""

    id: str
    lang: str
    title: str
    text: str
    score: float = 0.0


class Retriever(Protocol):
    """Per-language search over one corpus."""

    languages: tuple[str, ...]

    def search(self, queries: Sequence[str], lang: str, k: int) -> list[list[Passage]]:
        """The ``k`` best passages of ``lang`` for each query (fewer when the language has fewer)."""


def read_corpus(path: str | Path) -> tuple[list[Passage], list[str]]:
    """Passages of a JSONL corpus and one ``FILE:LINE: field F: problem`` line per skipped row."""
    passages, errors = [], []
    with Path(path).open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                errors.append(f"{where}: field json: not valid JSON ({error.msg})")
                continue
            problem = _row_problem(row)
            if problem:
                errors.append(f"{where}: {problem}")
                continue
            passages.append(Passage(str(row["id"]), str(row["lang"]), str(row.get("title") or ""), str(row["text"])))
    return passages, errors


def _row_problem(row: object) -> str | None:
    if not isinstance(row, dict):
        return "field json: expected an object"
    for name in ("id", "lang", "text"):
        if row.get(name) is None or not str(row[name]).strip():
            return f"field {name}: missing or empty"
    return None


def by_language(passages: Sequence[Passage], languages: Sequence[str] | None = None) -> dict[str, list[Passage]]:
    """Passages grouped per language (only ``languages`` when given; unknown ones are an error)."""
    grouped: dict[str, list[Passage]] = {}
    for passage in passages:
        grouped.setdefault(passage.lang, []).append(passage)
    if languages:
        missing = [lang for lang in languages if lang not in grouped]
        if missing:
            raise ValueError(f"corpus has no passage in {missing} (it has {sorted(grouped)})")
        grouped = {lang: grouped[lang] for lang in languages}
    return grouped


def round_languages(rounds: Sequence[Sequence[str]], search_index: int, query_lang: str,
                    corpus_languages: Sequence[str]) -> list[str]:
    """Languages searched by the ``search_index``-th search (0-based) of a rollout, in corpus order."""
    words = rounds[min(search_index, len(rounds) - 1)]
    chosen: list[str] = []
    for word in words:
        if word == "query":
            picked = [query_lang]
        elif word == "others":
            picked = [lang for lang in corpus_languages if lang != query_lang]
        elif word == "all":
            picked = list(corpus_languages)
        else:
            picked = [word]
        chosen += [lang for lang in picked if lang in corpus_languages and lang not in chosen]
    return chosen


def format_information(results: Sequence[tuple[str, Sequence[Passage]]], passage_chars: int) -> str:
    """Text of one ``<information>`` block: per language, numbered passages cut to ``passage_chars``.

    >>> print(format_information([("fr", [Passage("1", "fr", "Paris", "Capitale de la France.")])], 200))
    [fr] 1. Paris: Capitale de la France.
    """
    lines = []
    for lang, passages in results:
        for rank, passage in enumerate(passages, start=1):
            body = f"{passage.title}: {passage.text}" if passage.title else passage.text
            lines.append(f"[{lang}] {rank}. {body[:passage_chars].strip()}")
    return "\n".join(lines) if lines else "(no passage found)"
