"""Long, realistic reasoning traces for the golden reward test, and the values they pin.

The traces are assembled deterministically from the offline benchmark copies (MGSM
questions and few-shot answers in eleven languages, MMATH problems with LaTeX in
ten): reasoning steps separated by blank lines inside ``<think>…</think>``, then a
boxed answer. They cover what the language rewards must judge at real lengths
(500 to 16,000 characters): traces fully in the query language, traces that switch
to English for some steps or think in English and answer in the query language,
looping traces, truncated think blocks, wrong or missing answers, single-paragraph
traces, LaTeX-heavy steps, and Chinese/Japanese mixing.

``python -m tests.helpers.golden_traces OUT.jsonl`` rebuilds the file the golden test
reads, with the values today's rewards give (run it only to re-pin on purpose).
"""

from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path

MGSM_LANGS = ("en", "es", "fr", "de", "ru", "zh", "ja", "th", "sw", "bn", "te")
ANSWER = {"en": "The answer is {}.", "fr": "La réponse est {}.", "de": "Die Antwort ist {}.",
          "es": "La respuesta es {}.", "pt": "A resposta é {}.", "ja": "答えは {} です。", "zh": "答案是 {}。",
          "th": "คำตอบคือ {}", "ko": "답은 {}입니다.", "ru": "Ответ: {}.", "sw": "Jibu ni {}.", "bn": "উত্তর হল {}।",
          "te": "సమాధానం {}."}
_SENTENCE = re.compile(r"(?<=[.?!。？！।])\s*")


def _split(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if len(s.strip()) >= 6]


def load_pools(shared: Path) -> dict[str, list[str]]:
    """Sentences per language: MGSM questions and few-shot answers, MMATH problems (pt, ko)."""
    exemplars = json.loads((shared / "mgsm" / "exemplars.json").read_text(encoding="utf-8"))["exemplars"]
    pools: dict[str, list[str]] = {}
    for lang in MGSM_LANGS:
        rows = (shared / "mgsm" / f"mgsm_{lang}.tsv").read_text(encoding="utf-8").splitlines()
        pool = [s for row in rows[:120] for s in _split(row.split("\t")[0])]
        pool += [s for shot in exemplars.get(lang, {}).values() for s in _split(shot["a"])]
        pools[lang] = pool
    for lang in ("pt", "ko", "fr", "ja"):
        problems = json.loads((shared / "mmath" / f"{lang}.json").read_text(encoding="utf-8"))
        pools[f"{lang}-math"] = [s for p in problems[:60] for s in _split(p["question"])]
    pools["pt"] = pools["pt-math"]
    pools["ko"] = pools["ko-math"]
    return pools


def _step(pool: list[str], rng: random.Random, lines: int = 1) -> str:
    parts = [" ".join(rng.sample(pool, rng.randint(1, 2))) for _ in range(lines)]
    a, b = rng.randint(2, 99), rng.randint(2, 99)
    return "\n".join(parts) + rng.choice([f" {a} × {b} = {a * b}.", f" $ {a} + {b} = {a + b} $", "",
                                          f"\n$$\\frac{{{a}}}{{{b}}} \\approx {a / b:.2f}$$"])


def _steps(pool: list[str], chars: int, rng: random.Random, *, english: list[str] | None = None,
           english_share: float = 0.0, lines: int = 1) -> list[str]:
    out: list[str] = []
    while sum(len(s) + 2 for s in out) < chars:
        source = english if english is not None and rng.random() < english_share else pool
        out.append(_step(source, rng, lines=rng.randint(1, lines)))
    return out


def _trace(kind: str, lang: str, chars: int, pools: dict[str, list[str]], rng: random.Random) -> tuple[str, str]:
    """(completion, gold) of one kind of trace."""
    gold = str(rng.randint(2, 9999))
    pool, english = pools[lang], pools["en"]
    answer = ANSWER[lang].format(f"\\boxed{{{gold}}}")
    if kind == "clean":
        body = "\n\n".join(_steps(pool, chars, rng, lines=2))
    elif kind == "switch10":
        body = "\n\n".join(_steps(pool, chars, rng, english=english, english_share=0.1))
    elif kind == "switch50":
        body = "\n\n".join(_steps(pool, chars, rng, english=english, english_share=0.5, lines=2))
    elif kind == "english":
        body = "\n\n".join(_steps(english, chars, rng))
    elif kind == "math":
        body = "\n\n".join(_steps(pools.get(f"{lang}-math", pool), chars, rng, lines=2))
    elif kind == "one_paragraph":
        body = "\n".join(_steps(pool, chars, rng))
    elif kind == "loop":
        head = _steps(pool, chars // 4, rng)
        body = "\n\n".join(head) + "\n\n" + (_step(pool, rng) + " ") * max(3, (chars * 3 // 4) // 120)
    elif kind == "truncated":
        return "<think>" + "\n\n".join(_steps(pool, chars, rng)), gold
    elif kind == "wrong":
        body = "\n\n".join(_steps(pool, chars, rng))
        answer = ANSWER[lang].format(f"\\boxed{{{int(gold) + 1}}}")
    elif kind == "no_box":
        body = "\n\n".join(_steps(pool, chars, rng))
        answer = ANSWER[lang].format(gold)
    elif kind == "zh_kana":
        body = "\n\n".join(_steps(pool, chars, rng, english=pools["ja"], english_share=0.3))
    else:
        raise ValueError(f"unknown trace kind {kind!r}")
    return f"<think>{body}</think>{answer}", gold


PLAN = [  # (kind, lang, chars)
    ("clean", "fr", 16_000), ("clean", "ja", 16_000), ("clean", "th", 4_000), ("clean", "de", 4_000),
    ("clean", "sw", 4_000), ("clean", "bn", 2_000), ("clean", "te", 2_000), ("clean", "ru", 4_000),
    ("clean", "es", 500), ("clean", "zh", 4_000), ("math", "pt", 8_000), ("math", "ko", 8_000),
    ("math", "fr", 4_000), ("math", "ja", 4_000), ("switch10", "fr", 16_000), ("switch10", "es", 4_000),
    ("switch50", "de", 8_000), ("switch50", "th", 4_000), ("english", "fr", 4_000), ("english", "ja", 4_000),
    ("one_paragraph", "fr", 4_000), ("one_paragraph", "zh", 2_000), ("loop", "fr", 16_000),
    ("loop", "ja", 4_000), ("truncated", "fr", 8_000), ("wrong", "de", 4_000), ("no_box", "es", 2_000),
    ("zh_kana", "zh", 4_000), ("clean", "en", 4_000), ("switch10", "pt", 4_000),
]


def build_traces(shared: Path, seed: int = 16) -> list[dict]:
    """Rows ``{"id", "kind", "lang", "gold", "completion"}`` of ``PLAN``."""
    pools, rng = load_pools(shared), random.Random(seed)
    rows = []
    for index, (kind, lang, chars) in enumerate(PLAN):
        text, gold = _trace(kind, lang, chars, pools, rng)
        rows.append({"id": f"{index:02d}-{kind}-{lang}", "kind": kind, "lang": lang, "gold": gold, "completion": text})
    return rows


def reward_values(rows: list[dict]) -> dict:
    """What the language rewards give on ``rows`` (called as one batch each), and what they log."""
    from types import SimpleNamespace

    from components.language import get_detector
    from components.rewards import build_reward
    from components.rewards.repetition import has_degenerate_repetition

    langs = sorted({r["lang"] for r in rows})
    texts, golds, lang = [r["completion"] for r in rows], [r["gold"] for r in rows], [r["lang"] for r in rows]
    out: dict = {"rewards": {}, "logged": {}}

    def call(key: str, name: str, params: dict, **extra) -> None:
        logged: dict = {}
        reward = build_reward(name, params, languages=langs)
        if "tau" in extra:
            reward.curriculum.tau = extra.pop("tau")
        out["rewards"][key] = reward(["q"] * len(rows), texts, gold=golds, lang=lang,
                                     log_metric=lambda n, v: logged.__setitem__(n, v), **extra)
        out["logged"][key] = logged

    call("pcs_tau_0.1", "pcs", {})
    call("pcs_tau_0.9", "pcs", {}, tau=0.9)
    call("softlc_completion", "softlc", {})
    call("softlc_trace", "softlc", {"scope": "trace"})
    call("softlc_response", "softlc", {"scope": "response"})
    call("adamame_half", "adamame", {}, trainer_state=SimpleNamespace(global_step=50, max_steps=100))
    call("adamame_2000", "adamame", {"detect_chars": 2000}, trainer_state=SimpleNamespace(global_step=100, max_steps=100))
    pcs = build_reward("pcs", {}, languages=langs)
    detector = get_detector(langs)
    out["pcs_slc"] = [pcs.signals(t, g, l, detector).slc for t, g, l in zip(texts, golds, lang)]
    out["repetition"] = {
        "default": [has_degenerate_repetition(t) for t in texts],
        "p16_span8": [has_degenerate_repetition(t, max_period=16, min_span=8) for t in texts],
        "repeats5": [has_degenerate_repetition(t, min_repeats=5, min_span=40) for t in texts],
    }
    return out


def main(path: str) -> None:
    shared = Path(__file__).resolve().parents[2].parent / "shared" / "data"
    rows = build_traces(shared)
    payload = {"traces": rows, "expected": reward_values(rows)}
    Path(path).write_text(json.dumps(payload, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1])
