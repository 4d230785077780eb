"""A labeled corpus of long reasoning traces: MGSM's human-written text in 11 languages between the residue
reasoning models write, each line labeled with the language it was written in.

A trace answers one MGSM problem in one language L (en es fr de ru zh ja th sw bn te), one line per element:

* the question quoted back, sentence by sentence (``> ...``): MGSM's translation of the problem into L;
* steps, a paragraph each: a ``Step k:`` label, one or two reasoning sentences (the sentences of MGSM's
  exemplar chains of thought in L, and the question's own sentences restated), and what a reasoning model
  writes between them: label lines with arithmetic (``Total: 16 - 3 = 13``), ``So, 13 x 2 = 26.``, a bare
  ``Wait,`` or ``So:``, list markers with names from the question and units (``- Janet: 16 eggs``), display
  and inline LaTeX, a bold heading, a check (``Let me check: 5 + 3 = 8. Yes.``);
* a closing answer line.

Residue words are in L, from a small hand-written vocabulary per language (:data:`RESIDUE`); names are the
Latin-script capitalized words a Latin-script question holds, as written there. Every trace has 40 lines or
more. Three variants of each (problem, language): ``single`` (every line in L), ``sentence`` (one sentence
in another language inserted between two steps: a sentence of the same problem's question or of an exemplar
chain in that language) and ``step`` (one whole step, label and sentences, in that language). The other
language is English for a non-English trace (reasoning drifting into English) and, for an English trace,
one of the ten others in turn. Everything is drawn with ``random.Random(seed)``: the corpus is deterministic.
"""

from __future__ import annotations

import csv
import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

LANGUAGES = ("en", "es", "fr", "de", "ru", "zh", "ja", "th", "sw", "bn", "te")
UNSPACED = ("zh", "ja", "th")
# (total, step, so, wait, now, answer, remaining, cost, time, minutes, dollars, each, check, yes, first)
_FIELDS = ("total", "step", "so", "wait", "now", "answer", "remaining", "cost", "time", "minutes", "dollars",
           "each", "check", "yes", "first")
RESIDUE: dict[str, dict[str, str]] = {lang: dict(zip(_FIELDS, words, strict=True)) for lang, words in {
    "en": ("Total", "Step", "So", "Wait", "Now", "Answer", "Remaining", "Cost", "Time", "minutes", "dollars",
           "each", "Let me check", "Yes", "First"),
    "es": ("Total", "Paso", "Entonces", "Espera", "Ahora", "Respuesta", "Restante", "Costo", "Tiempo", "minutos",
           "dólares", "cada uno", "Verifiquemos", "Sí", "Primero"),
    "fr": ("Total", "Étape", "Donc", "Attends", "Maintenant", "Réponse", "Reste", "Coût", "Temps", "minutes",
           "dollars", "chacun", "Vérifions", "Oui", "D'abord"),
    "de": ("Insgesamt", "Schritt", "Also", "Moment", "Jetzt", "Antwort", "Rest", "Kosten", "Zeit", "Minuten",
           "Dollar", "jeweils", "Prüfen wir", "Ja", "Zuerst"),
    "ru": ("Итого", "Шаг", "Итак", "Подождите", "Теперь", "Ответ", "Остаток", "Стоимость", "Время", "минут",
           "долларов", "каждый", "Проверим", "Да", "Сначала"),
    "zh": ("总计", "第{k}步", "所以", "等等", "现在", "答案", "剩余", "成本", "时间", "分钟", "美元", "每个",
           "让我检查一下", "对", "首先"),
    "ja": ("合計", "ステップ{k}", "だから", "待って", "次に", "答え", "残り", "費用", "時間", "分", "ドル", "それぞれ",
           "確認します", "はい", "まず"),
    "th": ("รวม", "ขั้นตอนที่ {k}", "ดังนั้น", "เดี๋ยวก่อน", "ตอนนี้", "คำตอบ", "ที่เหลือ", "ค่าใช้จ่าย", "เวลา", "นาที",
           "ดอลลาร์", "แต่ละอัน", "ตรวจสอบอีกครั้ง", "ใช่", "ก่อนอื่น"),
    "sw": ("Jumla", "Hatua", "Kwa hiyo", "Subiri", "Sasa", "Jibu", "Iliyobaki", "Gharama", "Muda", "dakika", "dola",
           "kila moja", "Hebu nihakiki", "Ndiyo", "Kwanza"),
    "bn": ("মোট", "ধাপ", "সুতরাং", "দাঁড়াও", "এখন", "উত্তর", "অবশিষ্ট", "খরচ", "সময়", "মিনিট", "ডলার", "প্রতিটি",
           "আবার যাচাই করি", "হ্যাঁ", "প্রথমে"),
    "te": ("మొత్తం", "దశ", "కాబట్టి", "ఆగండి", "ఇప్పుడు", "సమాధానం", "మిగిలినవి", "ఖర్చు", "సమయం", "నిమిషాలు",
           "డాలర్లు", "ప్రతి ఒక్కటి", "మళ్ళీ తనిఖీ చేద్దాం", "అవును", "మొదట"),
}.items()}
_SENTENCE_END = re.compile(r"(?<=[。！？।])\s*|(?<=[.!?])\s+")
_LATIN_NAME = re.compile(r"[A-Z][a-z]{2,}")
_THAI = re.compile("[\u0e00-\u0e7f]")
_LETTER = re.compile(r"[^\W\d_]")


@dataclass(frozen=True)
class Element:
    """One element of a trace: its text (a line, or a display-math block of several), its label and its role."""

    text: str
    lang: str
    role: str


@dataclass
class Trace:
    id: str
    lang: str
    variant: str  # single | sentence | step
    foreign: str | None
    paragraphs: list[list[Element]] = field(default_factory=list)

    @property
    def elements(self) -> list[Element]:
        return [element for paragraph in self.paragraphs for element in paragraph]

    @property
    def lines(self) -> int:
        return sum(element.text.count("\n") + 1 for element in self.elements)

    @property
    def completion(self) -> str:
        body = "\n\n".join("\n".join(element.text for element in paragraph) for paragraph in self.paragraphs)
        return f"<think>\n{body}\n</think>\n\n\\boxed{{{self.answer}}}"

    answer: str = "0"


def split_sentences(text: str, lang: str) -> list[str]:
    """Sentences of ``text``. Thai writes no sentence marks: its space-separated clauses are the sentences, a
    clause of fewer than six Thai characters (a number and its unit, ``16 ฟอง``) joined to the one before."""
    if lang != "th":
        return [part.strip() for part in _SENTENCE_END.split(text) if part and part.strip()]
    clauses: list[str] = []
    for chunk in text.split():
        if clauses and len(_THAI.findall(chunk)) < 6:
            clauses[-1] += f" {chunk}"
        else:
            clauses.append(chunk)
    return clauses


def read_sources(data_dir: Path) -> dict[str, dict]:
    """Per language: the 250 MGSM questions with their answers, and the sentences of its 8 exemplar chains."""
    exemplars = json.loads((data_dir / "mgsm" / "exemplars.json").read_text(encoding="utf-8"))["exemplars"]
    out = {}
    for lang in LANGUAGES:
        with (data_dir / "mgsm" / f"mgsm_{lang}.tsv").open(encoding="utf-8", newline="") as handle:
            rows = list(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
        answers = [exemplars[lang][key]["a"] for key in sorted(exemplars[lang])]
        chains = [re.split(r"[:：]", answer, maxsplit=1)[-1].strip() for answer in answers]  # after "Step-by-Step Answer:"
        out[lang] = {"questions": [row[0] for row in rows], "answers": [row[1].replace(",", "") for row in rows],
                     "chains": [split_sentences(chain, lang) for chain in chains]}
    return out


def _step_label(lang: str, k: int) -> str:
    step = RESIDUE[lang]["step"]
    colon = "：" if lang in ("zh", "ja") else ":"
    return (step.format(k=k) if "{k}" in step else f"{step} {k}") + colon


def _residue(rng: random.Random, lang: str, names: list[str]) -> list[str]:
    """Two or three lines of what a model writes between sentences, in ``lang``'s words."""
    words, comma = RESIDUE[lang], "，" if lang in ("zh", "ja") else ","
    a, b = rng.randint(2, 90), rng.randint(2, 30)
    name = rng.choice(names) if names else words["total"]
    choices = [
        f"{words['total']}: {a} + {b} = {a + b}", f"{words['so']}{comma} {a} x {b} = {a * b}.",
        f"{words['wait']}{comma}", f"{words['so']}:", f"- {name}: {a} {words['minutes']}",
        f"{rng.randint(1, 4)}. {words['cost']}: ${a}", f"$$\n{a} \\times {b} = {a * b}\n$$",
        f"\\[ \\frac{{{a * b}}}{{{b}}} = {a} \\]", f"{words['remaining']} = {a + b} - {b} = {a}",
        f"**{words['time']}: {a} {words['minutes']}**", f"{words['check']}: {a} + {b} = {a + b}. {words['yes']}.",
        f"{words['now']}{comma} $x = {a}$", f"{name} = {a} {words['dollars']}", f"{words['each']}: {b}",
        f"{words['first']}{comma} {a} - {b} = {a - b}", f"{words['wait']}{comma} {a} + {b} = {a + b}?",
    ]
    return rng.sample(choices, rng.randint(2, 3))


def names_in(question: str, lang: str) -> list[str]:
    """Capitalized Latin words after a sentence's first word (names, mostly), as the question writes them."""
    found = {word.strip(",;:'\"()") for sentence in split_sentences(question, lang) for word in sentence.split()[1:]}
    return sorted(word for word in found if _LATIN_NAME.fullmatch(word))


def _sentence_pool(sources: dict, lang: str, problem: int) -> list[str]:
    return split_sentences(sources[lang]["questions"][problem], lang) + [
        sentence for chain in sources[lang]["chains"] for sentence in chain]


def _step(rng: random.Random, lang: str, k: int, pool: list[str], names: list[str]) -> list[Element]:
    lines = [Element(_step_label(lang, k), lang, "label")]
    for sentence in rng.sample(pool, min(len(pool), rng.randint(1, 2))):
        lines.append(Element(sentence, lang, "sentence"))
    lines += [Element(text, lang, "residue") for text in _residue(rng, lang, names)]
    return lines


def _single(rng: random.Random, sources: dict, lang: str, problem: int, steps: int, *, chars: int = 0,
            pool: list[str] | None = None) -> Trace:
    """A trace of ``steps`` steps, or of as many as make it ``chars`` characters long."""
    question = sources[lang]["questions"][problem]
    names = names_in(question, lang) if lang not in ("ru", "zh", "ja", "th", "bn", "te") else []
    pool = pool or _sentence_pool(sources, lang, problem)
    trace = Trace(f"{lang}-{problem:03d}", lang, "single", None, answer=sources[lang]["answers"][problem])
    trace.paragraphs.append([Element(f"> {s}", lang, "question") for s in split_sentences(question, lang)])
    k, length = 0, len(question)
    while k < steps or length < chars:
        k += 1
        trace.paragraphs.append(_step(rng, lang, k, pool, names))
        length += sum(len(element.text) + 1 for element in trace.paragraphs[-1]) + 1
    words = RESIDUE[lang]
    trace.paragraphs.append([Element(f"**{words['answer']}: {trace.answer}**", lang, "residue")])
    return trace


def _foreign_for(lang: str, index: int) -> str:
    others = [other for other in LANGUAGES if other != "en"]
    return others[index % len(others)] if lang == "en" else "en"


def _injected(rng: random.Random, base: Trace, sources: dict, problem: int, variant: str, foreign: str,
              steps: int) -> Trace:
    trace = Trace(f"{base.id}-{variant}", base.lang, variant, foreign, [list(p) for p in base.paragraphs],
                  answer=base.answer)
    at = rng.randint(2, len(trace.paragraphs) - 2)
    pool = [s for s in _sentence_pool(sources, foreign, problem) if _LETTER.search(re.sub(r"\d", "", s))]
    if variant == "sentence":
        trace.paragraphs[at] = [*trace.paragraphs[at], Element(rng.choice(pool), foreign, "injected")]
    else:
        step = [Element(_step_label(foreign, at), foreign, "injected")] + [
            Element(s, foreign, "injected") for s in rng.sample(pool, 3)]
        trace.paragraphs.insert(at, step)
    return trace


def long_traces(data_dir: str | Path, count: int, chars: int = 7500, seed: int = 0,
                languages: tuple[str, ...] = LANGUAGES) -> list[Trace]:
    """``count`` single-language traces of at least ``chars`` characters, languages in turn, problems in order;
    their sentences are drawn from every MGSM question and exemplar chain of the language, so that few repeat
    (a reasoning model seldom writes the same sentence twice; its residue lines repeat, and they do here)."""
    sources = read_sources(Path(data_dir))
    rng = random.Random(seed)
    pools = {lang: [s for question in sources[lang]["questions"] for s in split_sentences(question, lang)]
             + [s for chain in sources[lang]["chains"] for s in chain] for lang in languages}
    return [_single(rng, sources, languages[i % len(languages)], (i // len(languages)) % 250, 0, chars=chars,
                    pool=pools[languages[i % len(languages)]]) for i in range(count)]


def build_corpus(data_dir: str | Path, problems: range = range(20), steps: int = 9, seed: int = 0,
                 languages: tuple[str, ...] = LANGUAGES) -> list[Trace]:
    """Every (problem, language)'s ``single`` trace and its ``sentence`` and ``step`` variants."""
    sources = read_sources(Path(data_dir))
    rng = random.Random(seed)
    corpus = []
    for lang in languages:
        for index, problem in enumerate(problems):
            base = _single(rng, sources, lang, problem, steps)
            foreign = _foreign_for(lang, index)
            corpus += [base, _injected(rng, base, sources, problem, "sentence", foreign, steps),
                       _injected(rng, base, sources, problem, "step", foreign, steps)]
    return corpus
