"""The conformance corpus: MGSM exemplar answers turned into reasoning traces, 13 variants each.

11 MGSM languages x 8 exemplars x 13 variants = 1,144 completions. Each exemplar's
step-by-step answer (``exemplars.json`` of the MGSM data) is split into sentences, one per
line, inside ``<think>…</think>``, followed by a boxed answer; the variants add the kinds
of confusion and the kinds of math that LCPR rules must tell apart:

clean, en_sentence (an English sentence line), en_words (English words inside a line),
other_line (a line of a related language), latex (display math over three lines, inline
``$\\text{total} = N$``, an undelimited ``\\frac``), numbers_only (equation-only lines),
mid_switch (a line switching to English mid-sentence), markdown (heading, bullets, bold),
hyphenated_en (``step-by-step``), quoted_en (``«total»`` and ``"check"``), no_think (no
think tags), units_labels (``AB = 5 cm, π ≈ 3.14`` and an ``OK``), short_en (``The answer
is N``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

LANGUAGES = ("en", "es", "fr", "de", "ru", "zh", "ja", "th", "sw", "bn", "te")
PARTNER = {"en": "de", "es": "fr", "fr": "es", "de": "en", "ru": "en", "zh": "ja", "ja": "zh",
           "th": "en", "sw": "en", "bn": "te", "te": "bn"}
VARIANTS = ("clean", "en_sentence", "en_words", "other_line", "latex", "numbers_only", "mid_switch",
            "markdown", "hyphenated_en", "quoted_en", "no_think", "units_labels", "short_en")
_SENTENCE = re.compile(r"(?<=[。！？।])\s*|(?<=[.!?])\s+")
_UNSPACED = {"zh", "ja"}


def sentences(answer: str) -> list[str]:
    """The exemplar answer without its "Step-by-Step Answer:" label, one sentence per item.

    Thai writes no sentence marks: its space-separated phrases are grouped three to a line.
    """
    body = re.split(r"[:：]", answer, maxsplit=1)[-1].strip()
    parts = [part.strip() for part in _SENTENCE.split(body) if part.strip()]
    if len(parts) == 1 and body.count(" ") > 3:
        phrases = body.split(" ")
        parts = [" ".join(phrases[i: i + 3]) for i in range(0, len(phrases), 3)]
    return parts


def _insert_middle(line: str, lang: str, insert: str) -> str:
    if lang in _UNSPACED:
        middle = len(line) // 2
        return f"{line[:middle]} {insert} {line[middle:]}"
    words = line.split()
    middle = max(1, len(words) // 2)
    return " ".join([*words[:middle], insert, *words[middle:]])


def _mid_switch(own: str, english: str, lang: str) -> str:
    head = own[: len(own) // 2] if lang in _UNSPACED else " ".join(own.split()[: len(own.split()) // 2])
    tail = " ".join(english.split()[len(english.split()) // 2:])
    return f"{head} {tail}"


def _variant_lines(variant: str, lines: list[str], lang: str, english: list[str], partner: list[str],
                   equation: str, number: int) -> list[str]:
    out = list(lines)
    first = min(1, len(out) - 1)
    if variant == "en_sentence":
        out.insert(first + 1, "Wait, let me double-check this calculation.")
    elif variant == "en_words":
        out[first] = _insert_middle(out[first], lang, "so the total")
    elif variant == "other_line":
        out.insert(first + 1, partner[0])
    elif variant == "latex":
        out[first:first + 1] = ["$$", equation.rstrip("."), "$$", f"{out[first]} $\\text{{total}} = {number}$",
                                f"\\frac{{{number * 2}}}{{2}} = {number}"]
    elif variant == "numbers_only":
        out[first:first] = [equation, f"= {number}"]
    elif variant == "mid_switch":
        out[first] = _mid_switch(out[first], english[min(first, len(english) - 1)], lang)
    elif variant == "markdown":
        out = [f"## {out[0]}", *[f"- {line}" for line in out[1:]], f"**{number}**"]
    elif variant == "hyphenated_en":
        out[first] = _insert_middle(out[first], lang, "step-by-step")
    elif variant == "quoted_en":
        out[first] = _insert_middle(out[first], lang, '«total» "check"')
    elif variant == "units_labels":
        out[first:first + 1] = ["AB = 5 cm, π ≈ 3.14", f"OK, {out[first]}"]
    elif variant == "short_en":
        out.insert(len(out) - 1, f"The answer is {number}")
    return out


def build_corpus(exemplars_path: str | Path, languages=LANGUAGES, exemplars: int = 8) -> list[dict]:
    """``[{"id", "lang", "variant", "completion"}]``: 1,144 rows for the 8 MGSM exemplars of 11 languages."""
    data = json.loads(Path(exemplars_path).read_text(encoding="utf-8"))
    rows = []
    for lang in languages:
        for index in range(1, exemplars + 1):
            key = str(index)
            lines = sentences(data["exemplars"][lang][key]["a"])
            english = sentences(data["exemplars"]["en"][key]["a"])
            partner = sentences(data["exemplars"][PARTNER[lang]][key]["a"])
            number = data["number_answers"][index - 1]
            equation = data["equation_solutions"][index - 1]
            for variant in VARIANTS:
                body = "\n".join(_variant_lines(variant, lines, lang, english, partner, equation, number))
                answer = f"\\boxed{{{number}}}"
                completion = f"{body}\n\n{answer}" if variant == "no_think" else f"<think>\n{body}\n</think>\n\n{answer}"
                rows.append({"id": f"{lang}-{index}-{variant}", "lang": lang, "variant": variant,
                             "completion": completion})
    return rows
