"""LLM translation of source queries, with gates and chrF (AdaMame §3.1).

AdaMame machine-translates each English query (DeepSeek-V3.2-Exp) and verifies
quality with a second model (Qwen3 32B). Here any generation backend translates,
and every translation passes three gates before it is used:

1. ``wrong_language``: lingua must read the output as the target language;
2. ``missing_numbers``: every number of the source survives (Unicode digits are
   read as ASCII, decimal commas and thousands separators are accepted);
3. ``judge_score`` / ``judge_unparseable`` (optional): a judge model rates the
   translation 1-5 and must reach ``judge_min_score``.

A failed translation goes to the *rejected* table with its reason and detail,
never silently lost. chrF (Popović 2015, sacrebleu's ``CHRF``, corpus level,
0-100) against reference translations is reported per language when the source
ships them (MSVAMP row *i* in every language is the same problem).

>>> missing_numbers("Tom has 18 apples and 2.5 pears.", "Tom a 18 pommes et 2,5 poires.")
[]
>>> missing_numbers("It costs 1,000 dollars for 3 days.", "Cela coûte 1 000 dollars pour trois jours.")
['3']
>>> parse_judge_score("<think>ok</think>Score: 4")
4
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from components.language import LANGUAGE_NAMES

if TYPE_CHECKING:
    from components.settings import SamplingSettings
    from components.generation import Generator
    from components.language import LanguageDetector

_GROUPED = re.compile(r"(?<!\d)\d{1,3}(?:[ \u00a0\u202f]\d{3})+(?!\d)")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def ascii_digits(text: str) -> str:
    """Replace every Unicode decimal digit (Thai, Bengali, full-width, ...) by its ASCII digit.

    >>> ascii_digits("๑๘ and ১০ and １２")
    '18 and 10 and 12'
    """
    return "".join(str(unicodedata.digit(c)) if unicodedata.category(c) == "Nd" else c for c in text)


def _canonical(digits: str) -> str | None:
    try:
        return format(Decimal(digits).normalize(), "f")
    except InvalidOperation:
        return None


def number_candidates(token: str) -> set[str]:
    """Values a number token may mean; three digits after the last separator are ambiguous.

    >>> sorted(number_candidates("1,000"))
    ['1', '1000']
    >>> sorted(number_candidates("2,5")), sorted(number_candidates("1.000,5"))
    (['2.5'], ['1000.5'])
    """
    last = max(token.rfind("."), token.rfind(","))
    if last < 0:
        return {v for v in [_canonical(token)] if v is not None}
    whole, frac = re.sub(r"[^\d]", "", token[:last]), token[last + 1 :]
    values = {_canonical(f"{whole or '0'}.{frac}")}
    if len(frac) == 3:
        values.add(_canonical(re.sub(r"[^\d]", "", token)))
    return {v for v in values if v is not None}


def numbers_in(text: str, *, spaced_groups: bool = False) -> list[set[str]]:
    """Candidate value sets of every number in ``text`` (in order of appearance)."""
    text = ascii_digits(text)
    tokens = _NUMBER.findall(text)
    out = [number_candidates(t) for t in tokens]
    if spaced_groups:
        out += [number_candidates(t.replace(" ", "").replace("\u00a0", "").replace("\u202f", ""))
                for t in _GROUPED.findall(text)]  # fmt: skip
    return out


def missing_numbers(source: str, translation: str) -> list[str]:
    """Source numbers (as written) that no number of the translation can stand for."""
    found: set[str] = set().union(*numbers_in(translation, spaced_groups=True))
    missing = []
    for token in _NUMBER.findall(ascii_digits(source)):
        if not number_candidates(token) & found:
            missing.append(token)
    return missing


EXAMPLE_SOURCE = "Tom has 3 apples and buys 5 more. How many apples does he have now?"
EXAMPLES = {  # one-shot translations of EXAMPLE_SOURCE: base models copy the source without one
    "fr": "Tom a 3 pommes et en achète 5 de plus. Combien de pommes a-t-il maintenant ?",
    "es": "Tom tiene 3 manzanas y compra 5 más. ¿Cuántas manzanas tiene ahora?",
    "de": "Tom hat 3 Äpfel und kauft 5 weitere. Wie viele Äpfel hat er jetzt?",
    "pt": "Tom tem 3 maçãs e compra mais 5. Quantas maçãs ele tem agora?",
    "ru": "У Тома 3 яблока, и он покупает ещё 5. Сколько яблок у него теперь?",
    "ja": "トムはりんごを3個持っていて、さらに5個買います。トムは今りんごを何個持っていますか？",
    "zh": "汤姆有3个苹果，又买了5个。他现在有多少个苹果？",
    "ko": "톰은 사과 3개를 가지고 있고 5개를 더 삽니다. 톰은 지금 사과를 몇 개 가지고 있나요?",
    "th": "ทอมมีแอปเปิล 3 ผล และซื้อเพิ่มอีก 5 ผล ตอนนี้ทอมมีแอปเปิลกี่ผล",
}


def translation_prompt(text: str, source_lang: str, target_lang: str) -> str:
    """The translation request (a chat message or a base-model prompt), one-shot when an example exists."""
    src, tgt = LANGUAGE_NAMES.get(source_lang, source_lang), LANGUAGE_NAMES.get(target_lang, target_lang)
    shot = ""
    if source_lang == "en" and target_lang in EXAMPLES:
        shot = f"{src}: {EXAMPLE_SOURCE}\n{tgt}: {EXAMPLES[target_lang]}\n\n"
    return (
        f"Translate the following math problem from {src} into {tgt}. Keep every number exactly as "
        f"written, in digits. Output only the {tgt} translation.\n\n{shot}{src}: {text}\n{tgt}:"
    )


def judge_prompt(source: str, translation: str, source_lang: str, target_lang: str) -> str:
    """The judge request: a 1-5 rating answered with one digit."""
    src, tgt = LANGUAGE_NAMES.get(source_lang, source_lang), LANGUAGE_NAMES.get(target_lang, target_lang)
    return (
        f"Rate this translation of a math problem from {src} into {tgt} from 1 (wrong, or not in {tgt}) "
        f"to 5 (faithful and fluent, every number kept). Answer with one digit.\n\n"
        f"{src}: {source}\n{tgt}: {translation}\nScore:"
    )


def clean_translation(text: str, stop_label: str | None = None) -> str:
    """Drop a think block, what follows a line starting with ``stop_label`` (a base model going on
    with the next example), surrounding quotes and a leading ``Translation:`` label.

    >>> clean_translation('<think>hmm</think> Translation: "Bonjour 3"')
    'Bonjour 3'
    >>> clean_translation(" Il a 3 chats.\\n\\nEnglish: He has", "English:")
    'Il a 3 chats.'
    """
    from components.verification import split_think

    split = split_think(text)
    body = split.response if split.has_think else text
    if stop_label:
        body = re.split(rf"(?m)^\s*{re.escape(stop_label)}", body, maxsplit=1)[0]
    body = body.strip()
    body = re.sub(r"^\s*(?:[A-Z][a-z]+ )?translation\s*:\s*", "", body, flags=re.IGNORECASE)
    if len(body) >= 2 and body[0] in "\"“«'" and body[-1] in "\"”»'":
        body = body[1:-1].strip()
    return body


def parse_judge_score(text: str) -> int | None:
    """The first digit 1-5 of the judge's answer (after any think block), else ``None``."""
    from components.verification import split_think

    split = split_think(text)
    match = re.search(r"[1-5]", split.response if split.has_think else text)
    return int(match.group(0)) if match else None


@dataclass
class TranslationResult:
    """Accepted rows (``question`` in the target language) and rejected rows (``reason``)."""

    accepted: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)


def gate(source: str, translation: str, lang: str, detector: "LanguageDetector") -> tuple[str, str] | None:
    """The first failed cheap gate as ``(reason, detail)``, or ``None`` when both pass."""
    if not translation:
        return "empty", "no text"
    detected = detector.detect(translation)
    if detected != lang:
        return "wrong_language", f"detected {detected}"
    missing = missing_numbers(source, translation)
    if missing:
        return "missing_numbers", " ".join(missing)
    return None


def translate_rows(
    rows: list[dict[str, Any]],
    languages: list[str],
    generator: "Generator",
    sampling: "SamplingSettings",
    detector: "LanguageDetector",
    *,
    source_lang: str = "en",
    judge: "Generator | None" = None,
    judge_sampling: "SamplingSettings | None" = None,
    judge_min_score: int = 4,
) -> TranslationResult:
    """Translate every row into every language, gate each output, judge the survivors."""
    pairs = [(row, lang) for lang in languages for row in rows]
    prompts = [translation_prompt(row["question"], source_lang, lang) for row, lang in pairs]
    outputs = generator.generate(prompts, sampling.model_copy(update={"n": 1}))
    result, pending = TranslationResult(), []
    for (row, lang), completions in zip(pairs, outputs):
        text = clean_translation(completions[0].text, f"{LANGUAGE_NAMES.get(source_lang, source_lang)}:")
        record = {**row, "lang": lang, "source_question": row["question"], "question": text, "judge_score": None}
        failure = gate(row["question"], text, lang, detector)
        if failure:
            result.rejected.append({**record, "reason": failure[0], "detail": failure[1]})
        else:
            pending.append(record)
    if judge is None:
        result.accepted = pending
        return result
    asks = [judge_prompt(r["source_question"], r["question"], source_lang, r["lang"]) for r in pending]
    verdicts = judge.generate(asks, (judge_sampling or sampling).model_copy(update={"n": 1}))
    for record, completions in zip(pending, verdicts):
        score = parse_judge_score(completions[0].text)
        record["judge_score"] = score
        if score is None:
            result.rejected.append({**record, "reason": "judge_unparseable", "detail": completions[0].text[:80]})
        elif score < judge_min_score:
            result.rejected.append({**record, "reason": "judge_score", "detail": f"{score} < {judge_min_score}"})
        else:
            result.accepted.append(record)
    return result


def chrf_by_language(
    result: TranslationResult, references: dict[str, dict[int, str]]
) -> dict[str, dict[str, float]]:
    """Corpus chrF per language: ``chrf`` over accepted rows, ``chrf_all`` over every non-empty output."""
    from sacrebleu.metrics import CHRF

    metric = CHRF()
    scores: dict[str, dict[str, float]] = {}
    everything = result.accepted + [r for r in result.rejected if r["question"]]
    for lang, table in references.items():
        out: dict[str, float] = {}
        for name, rows in (("chrf", result.accepted), ("chrf_all", everything)):
            pairs = [(r["question"], table[r["row"]]) for r in rows if r["lang"] == lang and r["row"] in table]
            out[f"n_{name}"] = float(len(pairs))
            if pairs:
                out[name] = metric.corpus_score([h for h, _ in pairs], [[ref for _, ref in pairs]]).score
        scores[lang] = out
    return scores
