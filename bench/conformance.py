"""Agreement of polyreason's LCPR rules with the upstream code, per language and level.

Runs AdaMame's ``3_eval/metrics.py`` (``check_line_level``/``check_word_level`` on the trace
its ``extract_answer_parts`` gives) and the Language Confusion Benchmark's
``compute_metrics.py`` (``compute_metrics`` on one completion at a time) from local checkouts,
unmodified, beside polyreason's rules on the generated corpus of ``conformance_corpus.py``
(11 languages x 8 MGSM exemplars x 13 variants). Both sides use one lingua detector over
``BASE_LANGUAGES``: AdaMame's module detector is replaced by it (upstream builds its own over
the 12 MGSM languages), and the LCB module gets a ``fasttext`` stand-in whose ``predict``
answers lingua's top-1 language, because fastText's ``lid.176.bin`` cannot be downloaded here.

Per completion, the line verdict (True / False / None: not judged) and the word verdict as
WPR uses it (None unless the line level passed; None where a rule reports no WPR) are
compared; agreement = share of equal verdicts. ``--code DIR`` imports polyreason from
another checkout (e.g. main before a change: rules it lacks are skipped). ``--stress`` adds
the verifier part: the stress suite with every language given every number format, FNR per
language of the ``trusted`` verifier, and the false accepts that the integer-gold grouping
rule adds. The last line printed is one JSON object.

    python bench/conformance.py [--adamame /work/ref/dayeonki+adamame]
        [--lcb /work/ref/for-ai+language-confusion] [--code DIR] [--stress] [--show N]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import os
import sys
import tempfile
import types
from collections import defaultdict
from pathlib import Path

BENCH = Path(__file__).resolve().parent
EXEMPLARS = BENCH.parents[1] / "shared" / "data" / "mgsm" / "exemplars.json"
if not EXEMPLARS.exists():
    EXEMPLARS = Path("/work/shared/data/mgsm/exemplars.json")


def _import_file(name: str, path: Path) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    with contextlib.redirect_stdout(io.StringIO()):  # AdaMame prints its folder on import
        spec.loader.exec_module(module)
    return module


def load_adamame(checkout: Path, lingua_detector) -> types.ModuleType:
    module = _import_file("adamame_metrics", checkout / "3_eval" / "metrics.py")
    module.detector = lingua_detector
    return module


def load_lcb(checkout: Path, detector) -> types.ModuleType:
    """Import ``compute_metrics.py`` with a lingua-backed ``fasttext`` and its word list."""

    class LinguaAsFastText:
        def predict(self, line: str):
            code = detector.detect(line, clean=False)
            return (f"__label__{code or 'unknown'}",), 1.0

    saved, here = sys.modules.get("fasttext"), os.getcwd()
    sys.modules["fasttext"] = types.SimpleNamespace(load_model=lambda path: LinguaAsFastText())
    with tempfile.TemporaryDirectory() as folder:
        os.symlink(checkout / "words", Path(folder) / "words")
        Path(folder, "lid.176.bin").touch()  # so the module does not download it
        os.chdir(folder)
        try:
            return _import_file("lcb_metrics", checkout / "compute_metrics.py")
        finally:
            os.chdir(here)
            if saved is None:
                del sys.modules["fasttext"]
            else:
                sys.modules["fasttext"] = saved


def upstream_adamame(module, completion: str, lang: str) -> tuple:
    trace = module.extract_answer_parts(completion)["reasoning_trace"]
    line = module.check_line_level(trace, lang)
    return line, (module.check_word_level(trace, lang) if line else None)


def upstream_lcb(module, trace: str, lang: str) -> tuple:
    normalized = module.normalize(trace)
    if not any(len(module.tokenize(line, lang)) >= 5 for line in normalized.split("\n")):
        return None, None
    metrics = module.compute_metrics([trace], lang)
    line = metrics["lpr"] == 1.0
    return line, (metrics["wpr"] == 1.0 if line and "wpr" in metrics else None)


def ours(lcpr, rule: str, completion: str, lang: str, detector, words) -> tuple:
    if hasattr(lcpr, "judge_trace"):
        verdict = lcpr.judge_trace(completion, lang, detector, rule, words)
        line, word = verdict["line_pass"], verdict["word_pass"]
    else:  # an older checkout: the function API over split_think's trace
        from components.verification import split_think

        trace = split_think(completion).trace
        line = lcpr.line_pass(trace, lang, detector, rule, words)
        word = lcpr.word_pass(trace, lang, detector, rule, words)
    return line, (word if line is True else None)


def agreement(pairs: list[tuple]) -> dict:
    table: dict = defaultdict(lambda: {"line": [0, 0], "word": [0, 0]})
    for lang, variant, mine, theirs in pairs:
        for key in (lang, "all", f"variant:{variant}"):
            for level, index in (("line", 0), ("word", 1)):
                table[key][level][0] += mine[index] == theirs[index]
                table[key][level][1] += 1
    return {key: {level: round(agree / total, 4) for level, (agree, total) in levels.items()}
            for key, levels in table.items()}


def run_lcpr(args, corpus) -> dict:
    from components.language import get_detector
    from components.metrics import lcpr

    detector = get_detector()
    adamame = load_adamame(Path(args.adamame), detector._detector)
    lcb = load_lcb(Path(args.lcb), detector)
    words = lcpr.load_english_words(str(Path(args.lcb) / "words"))
    known = getattr(lcpr, "LCPR_RULES", {name: None for name in lcpr.RULES})
    results, disagreements = {}, defaultdict(list)
    for rule in ("adamame", "adamame_reference", "lcb", "lcb_reference"):
        if rule not in known:
            continue
        pairs = []
        for row in corpus:
            mine = ours(lcpr, rule, row["completion"], row["lang"], detector, words)
            if rule.startswith("adamame"):
                theirs = upstream_adamame(adamame, row["completion"], row["lang"])
            else:
                from components.verification import split_think

                theirs = upstream_lcb(lcb, split_think(row["completion"]).trace, row["lang"])
            pairs.append((row["lang"], row["variant"], mine, theirs))
            if mine != theirs:
                disagreements[rule].append((row["id"], mine, theirs))
        results[rule] = agreement(pairs)
    return {"agreement": results, "disagreements": disagreements}


def print_lcpr(result: dict, languages, show: int) -> None:
    for rule, table in result["agreement"].items():
        print(f"\n{rule} vs upstream: agreement per language (line / word)")
        print("  " + " ".join(f"{lang:>11}" for lang in (*languages, "all")))
        print("  " + " ".join(f"{table[lang]['line']:>5.1%}/{table[lang]['word']:>5.1%}"
                              for lang in (*languages, "all")))
        variants = sorted(k for k in table if k.startswith("variant:"))
        print("  by variant: " + ", ".join(f"{k[8:]} {table[k]['line']:.0%}/{table[k]['word']:.0%}"
                                          for k in variants))
        for item in result["disagreements"][rule][:show]:
            print(f"    differs ({rule}): {item[0]}: ours {item[1]} upstream {item[2]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--adamame", default="/work/ref/dayeonki+adamame")
    parser.add_argument("--lcb", default="/work/ref/for-ai+language-confusion")
    parser.add_argument("--code", default=str(BENCH.parent), help="checkout whose components are measured")
    parser.add_argument("--stress", action="store_true", help="also measure the verifier on the stress suite")
    parser.add_argument("--show", type=int, default=0, help="print up to N disagreements per rule")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(args.code).resolve()))
    sys.path.insert(1, str(BENCH))
    from conformance_corpus import LANGUAGES, build_corpus
    from conformance_stress import run_stress_checks

    corpus = build_corpus(EXEMPLARS)
    print(f"corpus: {len(corpus)} completions; code under test: {args.code}")
    result = run_lcpr(args, corpus)
    print_lcpr(result, LANGUAGES, args.show)
    summary = {"corpus": len(corpus), "code": args.code, "lcpr": result["agreement"]}
    if args.stress:
        summary["stress"] = run_stress_checks()
    print(json.dumps(summary, sort_keys=True))


if __name__ == "__main__":
    main()
