"""Conformance with the upstream code: polyreason's LCPR rules and verifiers against what they follow.

Parts (``--parts``, default all):

``lcpr``
    AdaMame's ``3_eval/metrics.py`` (``check_line_level``/``check_word_level`` on the trace its
    ``extract_answer_parts`` gives) and the Language Confusion Benchmark's ``compute_metrics.py``
    (``compute_metrics`` on one completion at a time), imported unmodified from local checkouts,
    beside polyreason's rules on the generated corpus of ``conformance_corpus.py`` (11 languages x
    8 MGSM exemplars x 13 variants). Both sides use one lingua detector over ``BASE_LANGUAGES``:
    AdaMame's module detector is replaced by it (upstream builds its own over the 12 MGSM
    languages), and the LCB module gets a ``fasttext`` stand-in whose ``predict`` answers lingua's
    top-1 language, because fastText's ``lid.176.bin`` cannot be downloaded here. Per completion,
    the line verdict (True / False / None: not judged) and the word verdict as WPR uses it (None
    unless the line level passed; None where a rule reports no WPR) are compared; agreement =
    share of equal verdicts.
``math_verify``
    Math-Verify's own test suite (``conformance_math_verify.py``): its cases read as data from the
    checkout's ``tests/``, and every registered verifier's agreement with the expected verdicts on
    the numeric-gold cases and on all, each with its n and a Wilson 95% interval. Every
    disagreement on a numeric gold is listed with the reason the verdict stands, or
    ``unexplained``.
``stress``
    the verifier stress suite with every language given every number format, FNR per language of
    the ``trusted`` verifier, and the false accepts that the integer-gold grouping rule adds.

Checkouts live outside the repository: ``--upstream DIR`` (default ``$POLYREASON_UPSTREAM_DIR``,
else ``../shared/upstream`` beside the repository: ``bench/locations.py``) holds ``adamame``,
``language-confusion`` and ``Math-Verify`` (files of github.com/dayeonki/adamame,
github.com/for-ai/language-confusion, github.com/huggingface/Math-Verify);
``--adamame``/``--lcb``/``--math-verify`` name one directly (AdaMame's also
``$POLYREASON_ADAMAME_DIR``: the shared folder has no copy of its unlicensed code). A part whose
checkout is missing is skipped and named (``skipped`` in the JSON); without AdaMame's checkout the
``lcpr`` part compares the LCB rules only and says so (``skipped.lcpr_adamame``). The MGSM exemplars
come from ``--shared-data`` (default ``$POLYREASON_SHARED_DATA``, else ``../shared/data``).
``--code DIR`` imports polyreason from another checkout (e.g. main before a change: rules it lacks
are skipped). ``--smoke`` needs no checkout and takes seconds: the LCPR rules against their own
``_reference`` variants on 2 languages x 2 exemplars, the Math-Verify reader and judges on a small
suite of hand-written cases written in its test format to a temporary folder, and the stress
suite. The last line printed is one JSON object.

    python bench/conformance.py [--upstream ../shared/upstream] [--parts lcpr,math_verify,stress]
        [--math-verify DIR] [--adamame DIR] [--lcb DIR] [--shared-data DIR] [--code DIR] [--show N]
        [--smoke]
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
sys.path.insert(0, str(BENCH))
from locations import shared_data, upstream_checkout  # noqa: E402

PARTS = ("lcpr", "math_verify", "stress")


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


def run_lcpr(adamame_dir: Path | None, lcb_dir: Path, corpus: list[dict]) -> dict:
    """Each rule (and its ``_reference`` variant) against the upstream code on ``corpus`` (AdaMame's rules
    only where ``adamame_dir`` is given)."""
    from components.language import get_detector
    from components.metrics import lcpr
    from components.verification import split_think

    detector = get_detector()
    lcb = load_lcb(Path(lcb_dir), detector)
    words = lcpr.load_english_words(str(Path(lcb_dir) / "words"))
    upstream = {"lcb": lambda row: upstream_lcb(lcb, split_think(row["completion"]).trace, row["lang"])}
    if adamame_dir is not None:
        adamame = load_adamame(Path(adamame_dir), detector._detector)
        upstream["adamame"] = lambda row: upstream_adamame(adamame, row["completion"], row["lang"])
    return _compare(lcpr, corpus, detector, words,
                    {rule: upstream[rule.removesuffix("_reference")]
                     for rule in ("adamame", "adamame_reference", "lcb", "lcb_reference")
                     if rule.removesuffix("_reference") in upstream})


def run_lcpr_self(corpus: list[dict], words_path: Path) -> dict:
    """Each rule against its own ``_reference`` variant (the smoke mode: no upstream checkout)."""
    from components.language import get_detector
    from components.metrics import lcpr

    detector = get_detector()
    words = lcpr.load_english_words(str(words_path))
    reference = {rule: (lambda row, rule=rule: ours(lcpr, f"{rule}_reference", row["completion"], row["lang"],
                                                    detector, words))
                 for rule in ("adamame", "lcb")}
    return _compare(lcpr, corpus, detector, words, reference)


def _compare(lcpr, corpus: list[dict], detector, words, others: dict) -> dict:
    known = lcpr.RULES
    results, disagreements = {}, defaultdict(list)
    for rule, theirs_of in others.items():
        if rule not in known:
            continue
        pairs = []
        for row in corpus:
            mine = ours(lcpr, rule, row["completion"], row["lang"], detector, words)
            theirs = theirs_of(row)
            pairs.append((row["lang"], row["variant"], mine, theirs))
            if mine != theirs:
                disagreements[rule].append((row["id"], mine, theirs))
        results[rule] = agreement(pairs)
    return {"agreement": results, "disagreements": disagreements}


def print_lcpr(result: dict, languages, show: int, against: str = "upstream") -> None:
    for rule, table in result["agreement"].items():
        print(f"\n{rule} vs {against}: agreement per language (line / word)")
        print("  " + " ".join(f"{lang:>11}" for lang in (*languages, "all")))
        print("  " + " ".join(f"{table[lang]['line']:>5.1%}/{table[lang]['word']:>5.1%}"
                              for lang in (*languages, "all")))
        variants = sorted(k for k in table if k.startswith("variant:"))
        print("  by variant: " + ", ".join(f"{k[8:]} {table[k]['line']:.0%}/{table[k]['word']:.0%}"
                                          for k in variants))
        for item in result["disagreements"][rule][:show]:
            print(f"    differs ({rule}): {item[0]}: ours {item[1]} {against} {item[2]}")




def lcpr_part(args, corpus_size: dict) -> dict:
    from conformance_corpus import LANGUAGES, build_corpus

    languages = LANGUAGES[:2] if args.smoke else LANGUAGES
    corpus = build_corpus(args.shared_data / "mgsm" / "exemplars.json", languages, 2 if args.smoke else 8)
    corpus_size["corpus"] = len(corpus)
    print(f"corpus: {len(corpus)} completions; code under test: {args.code}")
    if args.smoke:
        result = run_lcpr_self(corpus, args.shared_data / "language_confusion" / "words")
        print_lcpr(result, languages, args.show, against="its _reference variant")
    else:
        adamame = args.adamame if (args.adamame / "3_eval" / "metrics.py").exists() else None
        result = run_lcpr(adamame, args.lcb, corpus)
        print_lcpr(result, languages, args.show)
    return result["agreement"]


def math_verify_part(args) -> dict:
    from conformance_math_verify import judge_all, print_table, read_cases, summarize, write_smoke_suite

    from components.verification import VERIFIERS

    with tempfile.TemporaryDirectory(prefix="math-verify-smoke-") as folder:
        checkout = write_smoke_suite(Path(folder)) if args.smoke else args.math_verify
        cases, not_literal = read_cases(checkout)
    table = judge_all(cases, sorted(VERIFIERS))
    summary = summarize(table)
    print_table(summary, table, len(cases), not_literal, args.show)
    return {"cases": len(cases), "not_literal": not_literal, "verifiers": summary}


def missing_checkouts(args, parts: list[str]) -> dict:
    """Parts whose checkout is absent: {part: reason} (none in smoke mode)."""
    if args.smoke:
        return {}
    needed = {"lcpr": [args.lcb / "compute_metrics.py"], "math_verify": [args.math_verify / "tests"]}
    if "lcpr" in parts:  # AdaMame's rules are compared only where its checkout is given
        needed["lcpr_adamame"] = [args.adamame / "3_eval" / "metrics.py"]
    return {part: f"{', '.join(str(p) for p in needed[part] if not p.exists())} not found"
            for part in [*parts, "lcpr_adamame"] if any(not p.exists() for p in needed.get(part, []))}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--upstream", type=Path, default=None, help="folder of the upstream checkouts")
    parser.add_argument("--adamame", type=Path, default=None)
    parser.add_argument("--lcb", type=Path, default=None)
    parser.add_argument("--math-verify", type=Path, default=None)
    parser.add_argument("--shared-data", type=Path, default=shared_data())
    parser.add_argument("--parts", default=",".join(PARTS), help="comma-separated: " + ", ".join(PARTS))
    parser.add_argument("--code", default=str(BENCH.parent), help="checkout whose components are measured")
    parser.add_argument("--show", type=int, default=0, help="print up to N disagreements per rule or verifier")
    parser.add_argument("--smoke", action="store_true", help="seconds, no upstream checkout (see the docstring)")
    args = parser.parse_args()
    for name in ("adamame", "lcb", "math_verify"):
        if getattr(args, name) is None:
            setattr(args, name, upstream_checkout(name, args.upstream))
    unknown = sorted(set(args.parts.split(",")) - set(PARTS))
    if unknown:
        parser.error(f"--parts: unknown {', '.join(unknown)}; known: {', '.join(PARTS)}")
    return args


def main() -> None:
    args = parse_args()
    sys.path.insert(0, str(Path(args.code).resolve()))
    parts = args.parts.split(",")
    skipped = missing_checkouts(args, parts)
    for part, why in skipped.items():
        print(f"{part}: skipped ({why}; --upstream DIR or $POLYREASON_UPSTREAM_DIR)")
    summary: dict = {"code": args.code, "smoke": args.smoke, "skipped": skipped}
    if "lcpr" in parts and "lcpr" not in skipped:
        summary["lcpr"] = lcpr_part(args, summary)
    if "math_verify" in parts and "math_verify" not in skipped:
        summary["math_verify"] = math_verify_part(args)
    if "stress" in parts:
        from conformance_stress import run_stress_checks

        summary["stress"] = run_stress_checks()
    print(json.dumps(summary, sort_keys=True))


if __name__ == "__main__":
    main()
