"""Scoring throughput: completions scored per second, on short synthetic rows and on reasoning-length traces.

Every scorer is on: answer extraction and verification (``--verifier``, default ``trusted``),
LCPR line and word level (``--lcpr-rule``), SLC and SLC&Acc, language consistency, TTC.
Rows are MGSM-like: 12 languages, 4 samples per problem, a ``<think>`` trace of 3-4
paragraphs (~6 lines, inline and display math, some English code-switching) and a
``\\boxed{}`` answer. Lines are drawn from per-language templates, so some repeat across rows;
the share of distinct detection units is printed (each distinct unit is detected once).

``--trace-chars N`` scores instead rows whose trace is as long as a reasoning model's (7,500
characters: 200-470 lines), from ``trace_corpus.long_traces``: MGSM sentences of the row's language, few
of them repeated, between label lines, LaTeX, list markers and openers, 11 languages in turn.

The lingua detector is built first and timed on its own (``detector_build_s``); ``rows_per_s``
is the median of ``--repeats`` runs of ``score_file`` (reading, validating, scoring,
aggregating); CPU seconds per run are printed too, since other jobs may share the cores.
The last line printed is one JSON object.

    python bench/score.py [--rows 1000] [--trace-chars 7500] [--verifier trusted] [--lcpr-rule adamame]
                          [--repeats 3] [--smoke]

``--smoke`` (CI): 48 short rows and 11 rows of 7,500 characters, one run each: seconds, numbers
meaningless (``long_rows_per_s`` is the long rows').
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from locations import shared_data  # noqa: E402
from trace_corpus import long_traces  # noqa: E402

from components.language import get_detector  # noqa: E402
from components.metrics.lcpr import line_units  # noqa: E402
from components.scoring import score_file  # noqa: E402
from components.settings import ScoringSettings  # noqa: E402
from components.verification import get_verifier, split_think  # noqa: E402

WORDS = shared_data() / "language_confusion" / "words"

# (names, items, templates): {n} name, {o} item, {a}/{b} numbers; CONNECTORS open some lines.
LANGUAGES: dict[str, tuple[list[str], list[str], list[str]]] = {
    "en": (["Janet", "Tom", "Maria"], ["apples", "eggs", "pencils", "books"], [
        "First, {n} has {a} {o} and buys {b} more.", "So we need the total number of {o}.",
        "Let me add them carefully.", "Therefore {n} ends up with the {o} computed above."]),
    "fr": (["Janet", "Pierre", "Claire"], ["pommes", "œufs", "crayons", "livres"], [
        "D'abord, {n} a {a} {o} et en achète {b} de plus.", "Il faut donc le nombre total de {o}.",
        "Additionnons-les soigneusement.", "Donc {n} termine avec les {o} calculés plus haut."]),
    "pt": (["Janete", "João", "Beatriz"], ["maçãs", "ovos", "lápis", "livros"], [
        "Primeiro, {n} tem {a} {o} e compra mais {b}.", "Então precisamos do número total de {o}.",
        "Então vamos somar tudo com cuidado.", "Portanto {n} fica com os {o} calculados acima."]),
    "es": (["Juana", "Pedro", "Lucía"], ["manzanas", "huevos", "lápices", "libros"], [
        "Primero, {n} tiene {a} {o} y compra {b} más.", "Entonces necesitamos el número total de {o}.",
        "Vamos a sumarlos con cuidado.", "Por lo tanto {n} termina con los {o} calculados arriba."]),
    "de": (["Janet", "Lukas", "Anna"], ["Äpfel", "Eier", "Stifte", "Bücher"], [
        "Zuerst hat {n} {a} {o} und kauft {b} dazu.", "Wir brauchen also die Gesamtzahl der {o}.",
        "Addieren wir sie sorgfältig.", "Also hat {n} am Ende die oben berechneten {o}."]),
    "sw": (["Amina", "Juma", "Neema"], ["machungwa", "mayai", "kalamu", "vitabu"], [
        "Kwanza, {n} ana {o} {a} na ananunua {b} zaidi.", "Kwa hiyo tunahitaji jumla ya {o}.",
        "Tuyajumlishe kwa uangalifu.", "Kwa hiyo {n} anabaki na {o} tulizohesabu hapo juu."]),
    "ja": (["花子", "太郎", "さくら"], ["りんご", "卵", "鉛筆", "本"], [
        "まず、{n}は{o}を{a}個持っていて、さらに{b}個買います。", "したがって、{o}の合計を求める必要があります。",
        "慎重に足し算をしましょう。", "よって、{n}の{o}は上で計算した数になります。"]),
    "ko": (["지민", "민수", "서연"], ["사과", "달걀", "연필", "책"], [
        "먼저 {n}는 {o}를 {a}개 가지고 있고 {b}개를 더 삽니다.", "따라서 {o}의 총 개수를 구해야 합니다.",
        "조심스럽게 더해 봅시다.", "그러므로 {n}는 위에서 계산한 만큼의 {o}를 가집니다."]),
    "zh": (["小明", "小红", "李华"], ["苹果", "鸡蛋", "铅笔", "书"], [
        "首先，{n}有{a}个{o}，又买了{b}个。", "所以我们需要求出{o}的总数。",
        "我们仔细地把它们加起来。", "因此{n}最后拥有上面算出的{o}。"]),
    "th": (["สมชาย", "มานี", "ปิติ"], ["แอปเปิ้ล", "ไข่", "ดินสอ", "หนังสือ"], [
        "ก่อนอื่น {n} มี{o} {a} ชิ้นและซื้อเพิ่มอีก {b} ชิ้น", "ดังนั้นเราต้องหาจำนวน{o}ทั้งหมด",
        "มาบวกกันอย่างระมัดระวัง", "ดังนั้น {n} จะมี{o}ตามที่คำนวณไว้ข้างบน"]),
    "ru": (["Анна", "Иван", "Мария"], ["яблок", "яиц", "карандашей", "книг"], [
        "Сначала у {n} есть {a} {o}, и она покупает ещё {b}.", "Значит, нужно найти общее количество {o}.",
        "Аккуратно сложим их.", "Следовательно, у {n} будет вычисленное выше число {o}."]),
    "bn": (["রহিম", "করিম", "সুমি"], ["আপেল", "ডিম", "পেন্সিল", "বই"], [
        "প্রথমে, {n}-এর কাছে {a}টি {o} আছে এবং সে আরও {b}টি কেনে।", "সুতরাং আমাদের মোট {o} সংখ্যা বের করতে হবে।",
        "সাবধানে যোগ করি।", "অতএব {n}-এর কাছে উপরে হিসাব করা {o} থাকবে।"]),
    "te": (["రాము", "సీత", "లక్ష్మి"], ["ఆపిల్స్", "గుడ్లు", "పెన్సిళ్లు", "పుస్తకాలు"], [
        "మొదట, {n} దగ్గర {a} {o} ఉన్నాయి మరియు మరో {b} కొంటారు.", "కాబట్టి మనం మొత్తం {o} సంఖ్యను కనుగొనాలి.",
        "జాగ్రత్తగా కలుపుదాం.", "కాబట్టి {n} దగ్గర పైన లెక్కించిన {o} ఉంటాయి."]),
}
CONNECTORS: dict[str, list[str]] = {
    "en": ["Now", "Next", "Then", "Also"], "fr": ["Maintenant", "Ensuite", "Puis", "Aussi"],
    "pt": ["Agora", "Em seguida", "Depois", "Também"], "es": ["Ahora", "Luego", "Después", "También"],
    "de": ["Jetzt", "Danach", "Dann", "Außerdem"], "sw": ["Sasa", "Kisha", "Baadaye", "Pia"],
    "ja": ["次に", "そして", "それから", "また"], "ko": ["이제", "다음으로", "그리고", "또한"],
    "zh": ["现在", "接下来", "然后", "另外"], "th": ["ตอนนี้", "ต่อไป", "จากนั้น", "นอกจากนี้"],
    "ru": ["Теперь", "Далее", "Затем", "Также"], "bn": ["এখন", "এরপর", "তারপর", "এছাড়া"],
    "te": ["ఇప్పుడు", "తరువాత", "ఆ తర్వాత", "అలాగే"],
}
SWITCHES = ["Wait, let me double-check the {o} count.", "Hmm, so the total is clear now.", "OK so {n} is done."]


LATIN_NAMES = ["Janet", "Tom", "Maria", "Pedro", "Anna", "Lukas", "Amina", "Juma", "Claire", "Beatriz",
               "Lucía", "Neema", "Sofia", "Hugo", "Ines", "Omar"]
CYRILLIC_NAMES = ["Анна", "Иван", "Мария", "Пётр", "Ольга", "Сергей", "Елена", "Дмитрий"]


def _line(rng: random.Random, lang: str, template: str) -> str:
    names, items, _ = LANGUAGES[lang]
    names = LATIN_NAMES if lang in ("en", "fr", "pt", "es", "de", "sw") else CYRILLIC_NAMES if lang == "ru" else names
    line = template.format(n=rng.choice(names), o=rng.choice(items), a=rng.randint(2, 99), b=rng.randint(2, 99))
    joiner = "" if lang in ("ja", "zh") else " "
    opener = rng.choice(CONNECTORS[lang] + [""])
    return f"{opener}{'、' if lang == 'ja' else '，' if lang == 'zh' else ','}{joiner}{line}" if opener else line


def synthetic_row(rng: random.Random, index: int, lang: str) -> dict:
    """One MGSM-like generation row with a think trace and a boxed answer."""
    templates = LANGUAGES[lang][2]
    a, b = rng.randint(2, 500), rng.randint(2, 500)
    paragraphs = [
        _line(rng, lang, templates[0]) + "\n" + _line(rng, lang, templates[1]),
        f"$$\n{a} + {b} = {a + b}\n$$\n" + _line(rng, lang, templates[2]),
        f"${a} + {b} = {a + b}$. " + _line(rng, lang, templates[3]),
    ]
    if rng.random() < 0.15:
        paragraphs.insert(2, _line(rng, "en", rng.choice(SWITCHES)))
    trace = "\n\n".join(paragraphs)
    completion = f"<think>\n{trace}\n</think>\n\n{_line(rng, lang, templates[3])} \\boxed{{{a + b}}}"
    gold = a + b if rng.random() < 0.8 else a + b + 1
    return {"id": f"p{index // 4:04d}", "sample_index": index % 4, "benchmark": "synthetic", "lang": lang,
            "gold": str(gold), "completion": completion, "num_tokens": len(completion) // 3, "max_context": 8192}


def write_rows(path: Path, n_rows: int, seed: int = 0, trace_chars: int = 0) -> None:
    if trace_chars:
        rows = [{"id": trace.id, "benchmark": "traces", "lang": trace.lang, "gold": trace.answer,
                 "completion": trace.completion, "num_tokens": len(trace.completion) // 3, "max_context": 32768}
                for trace in long_traces(shared_data(), n_rows, trace_chars, seed)]
    else:
        rng = random.Random(seed)
        langs = sorted(LANGUAGES)
        rows = [synthetic_row(rng, index, langs[(index // 4) % len(langs)]) for index in range(n_rows)]
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")


def distinct_line_share(path: Path) -> tuple[int, float]:
    """(checked lines, share of them that are distinct after cleaning) over a rows file."""
    lines = []
    for text in path.read_text(encoding="utf-8").splitlines():
        lines += line_units(split_think(json.loads(text)["completion"]).trace)
    return len(lines), len(set(lines)) / len(lines)


def measure(rows: int, trace_chars: int, settings: ScoringSettings, repeats: int) -> dict:
    """Score a fresh file of ``rows`` rows ``repeats`` times; its numbers and what to print about them."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rows.jsonl"
        write_rows(path, rows, trace_chars=trace_chars)
        n_lines, distinct = distinct_line_share(path)
        chars = [len(json.loads(line)["completion"]) for line in path.read_text(encoding="utf-8").splitlines()]
        times, cpu_times = [], []
        for _ in range(repeats):
            start, cpu_start = time.perf_counter(), time.process_time()
            result = score_file(path, settings)
            times.append(time.perf_counter() - start)
            cpu_times.append(time.process_time() - cpu_start)
    return {"rows": rows, "lines": n_lines, "distinct": distinct, "chars": statistics.mean(chars), "times": times,
            "cpu_times": cpu_times, "result": result, "rows_per_s": rows / statistics.median(times)}


def report(found: dict, args: argparse.Namespace) -> None:
    overall = found["result"]["aggregate"]["overall"]
    print(f"{found['rows']} rows of {found['chars']:.0f} characters on average, {found['lines']} checked lines, "
          f"{found['distinct']:.0%} distinct after cleaning")
    times = ", ".join(f"{t:.3f}" for t in found["times"])
    print(f"scoring runs (s): {times}; errors: {len(found['result']['errors'])}")
    print(f"overall: accuracy {overall['accuracy']:.3f} lpr {overall['lpr']:.3f} wpr {overall['wpr']:.3f} "
          f"slc {overall['slc']:.3f} language_consistency {overall['language_consistency']:.3f}")
    print(f"CPU time per run (s, all threads): {', '.join(f'{t:.3f}' for t in found['cpu_times'])} "
          f"-> {found['rows'] / statistics.median(found['cpu_times']):.0f} rows per CPU-second")
    print(f"completions scored per second: {found['rows_per_s']:.0f} "
          f"(verifier {args.verifier}, rule {args.lcpr_rule})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--trace-chars", type=int, default=0, help="rows of traces this long (0: short rows)")
    parser.add_argument("--verifier", default="trusted")
    parser.add_argument("--lcpr-rule", default="adamame", choices=["adamame", "lcb"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="48 short rows and 11 long ones, one run each (CI)")
    args = parser.parse_args()
    if args.smoke:
        args.rows, args.repeats, args.trace_chars = 48, 1, 0
    start = time.perf_counter()
    get_detector(LANGUAGES)
    build_s = time.perf_counter() - start
    get_verifier(args.verifier)
    settings = ScoringSettings(verifier=args.verifier, lcpr_rule=args.lcpr_rule, pass_k=[1, 4],
                               words_path=str(WORDS) if args.lcpr_rule == "lcb" else None)
    print(f"detector build (13 languages, preloaded): {build_s:.2f} s")
    found = measure(args.rows, args.trace_chars, settings, args.repeats)
    report(found, args)
    out = {"rows_per_s": round(found["rows_per_s"], 1), "detector_build_s": round(build_s, 3),
           "trace_chars": round(found["chars"])}
    if args.smoke:
        long = measure(11, 7500, settings, 1)
        report(long, args)
        out.update(long_rows_per_s=round(long["rows_per_s"], 1), long_trace_chars=round(long["chars"]))
    print(json.dumps(out))


if __name__ == "__main__":
    from components.catalog import install

    install()  # settings check registry names against the project's registries, as on the command line
    main()
