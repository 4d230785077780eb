"""Math-Verify's own test suite, read as data and judged by every registered verifier.

The cases are read from a checkout of ``huggingface/Math-Verify`` (its ``tests/*.py``) with
``ast``, never imported and never copied into this repository: every ``gold``/``pred``/
``expected`` row of a ``pytest.mark.parametrize`` whose values are literals, and every
``assert compare_strings(<literals>) == <literal>`` written out in a test body. What the
test passes to Math-Verify besides the two strings (``match_types``, ``precision``,
``strict``, ``allow_set_relation_comp``) is read from its ``compare_strings`` call, a
parameter of the row, or the helper's own defaults, and kept with the case.

A case has a *numeric gold* when Math-Verify, parsing the gold with the extraction the
test asks for, gives a constant that sympy simplifies to one number: an integer, a
fraction or a decimal (``10/9``, ``28\\%`` = 7/25), not ``\\sqrt{3}`` or ``\\pi``. That
decision is Math-Verify's, so it does not move with the code under test.

Each verifier judges ``pred`` as a completion (lenient extraction, language ``en``)
against ``gold``; it agrees with a case when its verdict equals the test's expected one.
``upstream`` is Math-Verify itself run with the test's own configuration (it shows which
expectations the installed math-verify meets). Rows computed in Python (an f-string)
rather than written as literals are counted as ``not_literal`` and left out.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path

EXPECTED_NAMES = ("expected", "result")
OPTION_NAMES = ("match_types", "precision", "strict", "allow_set_relation_comp")


@dataclass(frozen=True)
class Case:
    """One Math-Verify test case: where it is, the two strings, the verdict its test expects."""

    source: str
    gold: str
    pred: str
    expected: bool
    options: dict = field(default_factory=dict, hash=False)


def _helper_defaults(tree: ast.Module) -> dict:
    """Keyword defaults of the suite's ``compare_strings`` helper (``{}`` in a file without it)."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "compare_strings":
            names = [a.arg for a in node.args.args][-len(node.args.defaults):]
            return {n: ast.literal_eval(d) for n, d in zip(names, node.args.defaults) if n in OPTION_NAMES}
    return {}


def _call_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        func = node.func
        return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    return None


def _helper_call(function: ast.FunctionDef) -> ast.Call | None:
    return next((n for n in ast.walk(function) if _call_name(n) == "compare_strings"), None)


def _call_options(call: ast.Call | None, row: dict, defaults: dict) -> dict:
    """What the test passes to Math-Verify for one row (``mode: default`` when it calls parse/verify itself)."""
    if call is None:
        return {"mode": "default"}
    options = dict(defaults)
    for keyword in call.keywords:
        if keyword.arg in OPTION_NAMES:
            value = keyword.value
            options[keyword.arg] = row[value.id] if isinstance(value, ast.Name) else ast.literal_eval(value)
    return options


def _parametrized(function: ast.FunctionDef, defaults: dict, source: str) -> tuple[list[Case], int]:
    cases, skipped = [], 0
    for decorator in function.decorator_list:
        if _call_name(decorator) != "parametrize" or len(decorator.args) < 2:
            continue
        names = [n.strip() for n in ast.literal_eval(decorator.args[0]).split(",")]
        expected = next((n for n in EXPECTED_NAMES if n in names), None)
        if not ({"gold", "pred"} <= set(names) and expected) or not isinstance(decorator.args[1], (ast.List, ast.Tuple)):
            continue
        for index, element in enumerate(decorator.args[1].elts):
            try:
                row = dict(zip(names, ast.literal_eval(element)))
            except ValueError:
                skipped += 1
                continue
            cases.append(Case(f"{source}::{function.name}[{index}]", row["gold"], row["pred"], bool(row[expected]),
                              _call_options(_helper_call(function), row, defaults)))
    return cases, skipped


def _asserted(function: ast.FunctionDef, defaults: dict, source: str) -> list[Case]:
    """``assert compare_strings(gold, pred, …) == expected`` written out with literals."""
    cases = []
    for node in ast.walk(function):
        if not (isinstance(node, ast.Compare) and _call_name(node.left) == "compare_strings"
                and isinstance(node.ops[0], ast.Eq) and isinstance(node.comparators[0], ast.Constant)):
            continue
        try:
            gold, pred = (ast.literal_eval(arg) for arg in node.left.args[:2])
            options = _call_options(node.left, {}, defaults)
        except (ValueError, KeyError):
            continue
        cases.append(Case(f"{source}::{function.name}[line {node.lineno}]", gold, pred,
                          bool(node.comparators[0].value), options))
    return cases


def read_cases(checkout: Path) -> tuple[list[Case], int]:
    """(cases, rows left out because they are not literals) of the checkout's ``tests/*.py``."""
    tests = Path(checkout) / "tests"
    if not tests.is_dir():
        raise FileNotFoundError(f"{tests}: not a Math-Verify checkout (no tests/ folder)")
    helper = tests / "test_all.py"
    defaults = _helper_defaults(ast.parse(helper.read_text(encoding="utf-8"))) if helper.is_file() else {}
    cases, skipped = [], 0
    for path in sorted(tests.glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for function in (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")):
            found, left_out = _parametrized(function, defaults, path.name)
            cases += found or _asserted(function, defaults, path.name)
            skipped += left_out
    return cases, skipped


def _targets(options: dict) -> list:
    from math_verify import ExprExtractionConfig, LatexExtractionConfig

    if options.get("mode") == "default":
        return [LatexExtractionConfig(), ExprExtractionConfig()]
    kinds = {"latex": lambda: LatexExtractionConfig(boxed_match_priority=0), "expr": ExprExtractionConfig}
    return [kinds[kind]() for kind in options.get("match_types", ["latex", "expr"])]


def upstream_verdict(case: Case) -> bool:
    """Math-Verify's verdict with the configuration the test itself uses."""
    from math_verify import parse, verify

    targets = _targets(case.options)
    extra = {} if case.options.get("mode") == "default" else {
        "float_rounding": case.options.get("precision", 6), "strict": case.options.get("strict", True),
        "allow_set_relation_comp": case.options.get("allow_set_relation_comp", False)}
    return bool(verify(parse(case.gold, targets), parse(case.pred, targets), **extra))


def numeric_gold(case: Case) -> bool:
    """Math-Verify reads the gold, with the test's extraction, as one sympy number."""
    from math_verify import parse

    import sympy

    parsed = parse(case.gold, _targets(case.options))
    value = parsed[0] if parsed else None
    return isinstance(value, sympy.Basic) and value.is_number is True and sympy.simplify(value).is_Number is True


_INLINE_MATH_OVER_LINES = re.compile(r"(?<![$\\])\$(?!\$)[^$]*\n[^$]*\$|\\\((?:(?!\\\)).)*\n.*?\\\)", re.S)


def reason(case: Case, accepted: bool) -> str | None:
    """Why a verdict that differs from the test's expectation is the one polyreason keeps, or None.

    Two classes are decided on purpose: a test that asks Math-Verify for another rounding
    than its default (checked: Math-Verify at its default 6 places gives our verdict), and
    inline math broken over lines, which Math-Verify's tests reject.
    """
    precision = case.options.get("precision", 6)
    if precision != 6 and upstream_verdict(replace(case, options={**case.options, "precision": 6})) == accepted:
        return (f"the test sets precision={precision}; polyreason compares non-integers at 6 places "
                "(math-verify's default), where Math-Verify gives this verdict too")
    if accepted and not case.expected and _INLINE_MATH_OVER_LINES.search(case.pred):
        return ("inline math broken over lines: TeX reads a line break inside math as a space, so the "
                "answer as written is the gold; accepted on purpose (a verdict should not depend on where "
                "a model breaks its lines)")
    return None


def judge_all(cases: list[Case], verifiers: list[str], lang: str = "en") -> dict:
    """Per verifier (and ``upstream``): agreement on the numeric-gold cases and on all, with n, and the misses.

    A miss records whether the gold is numeric, the verdict and :func:`reason` (None: unexplained).
    """
    from components.verification import verify

    judges = {"upstream": upstream_verdict}
    judges.update({name: (lambda case, name=name: verify(name, case.pred, case.gold, lang).correct)
                   for name in verifiers})
    numeric = {case.source: numeric_gold(case) for case in cases}
    table: dict = {}
    for name, judge in judges.items():
        agree: dict = defaultdict(lambda: [0, 0])
        misses = []
        for case in cases:
            verdict = bool(judge(case))
            for group in ("all", "numeric_gold") if numeric[case.source] else ("all",):
                agree[group][0] += verdict == case.expected
                agree[group][1] += 1
            if verdict != case.expected:
                misses.append({"case": case.source, "numeric_gold": numeric[case.source], "verdict": verdict,
                               "reason": reason(case, verdict) if name != "upstream" else None})
        table[name] = {group: {"agreement": round(a / n, 4), "agree": a, "n": n} for group, (a, n) in agree.items()}
        table[name]["misses"] = misses
    return table


def wilson(agree: int, n: int) -> list[float]:
    """Wilson 95% interval of an agreement share (scipy's ``binomtest``)."""
    from scipy.stats import binomtest

    interval = binomtest(agree, n).proportion_ci(confidence_level=0.95, method="wilson")
    return [round(float(interval.low), 4), round(float(interval.high), 4)]


def summarize(table: dict) -> dict:
    """The JSON summary: per verifier and group agreement, n, interval; unexplained numeric-gold misses."""
    out = {}
    for name, row in table.items():
        groups = {group: {**row[group], "ci95": wilson(row[group]["agree"], row[group]["n"])}
                  for group in ("numeric_gold", "all") if group in row}
        unexplained = [m for m in row["misses"] if m["numeric_gold"] and m["reason"] is None]
        out[name] = {**groups, "unexplained_numeric_gold": len(unexplained)}
    return out


def print_table(summary: dict, table: dict, cases: int, not_literal: int, show: int, listed: str = "trusted") -> None:
    print(f"\nMath-Verify's test suite: {cases} cases (left out, computed rather than written: {not_literal}); "
          "agreement with the expected verdict, Wilson 95% interval")
    print(f"  {'verifier':12s}{'numeric gold':>30s}{'all cases':>30s}")
    for name, row in summary.items():
        cells = "".join(f"{row[g]['agree']:>9d}/{row[g]['n']:<4d}{row[g]['agreement']:>7.1%} "
                        f"[{row[g]['ci95'][0]:.1%}, {row[g]['ci95'][1]:.1%}]" if g in row else f"{'-':>30s}"
                        for g in ("numeric_gold", "all"))
        print(f"  {name:12s}{cells}")
    for name, row in table.items():
        misses = [m for m in row["misses"] if m["numeric_gold"]]
        for miss in misses if name == listed else misses[:show]:
            print(f"    {name} differs on {miss['case']} (says {miss['verdict']}): {miss['reason'] or 'unexplained'}")


# Hand-written cases in Math-Verify's test format, for the smoke mode (no checkout needed).
SMOKE_SUITE = '''
import pytest


def compare_strings(gold, pred, match_types=["latex", "expr"], precision=6, strict=True):
    raise NotImplementedError


@pytest.mark.parametrize(
    "gold,pred,expected",
    [
        ("$2/3$", "So the probability is 2/3.", 1),
        ("$18$", "She has 19 apples left.", 0),
        ("1000.5", "it is 1,000.5 m", 1),
        ("$-\\\\frac{3}{4}$", "The slope is $-\\\\frac{3}{4}$", 1),
        ("$[0,1)$", "$[0,1)$", 1),
        (f"{1 / 3}", "0.333", 0),
    ],
)
def test_smoke(gold, pred, expected):
    assert compare_strings(gold, pred, match_types=["latex", "expr"]) == expected


def test_written_out():
    assert compare_strings("$\\\\frac{1}{3}$", "0.3333", precision=4) == 1
'''


def write_smoke_suite(folder: Path) -> Path:
    """A checkout-shaped folder holding :data:`SMOKE_SUITE` as ``tests/test_all.py``."""
    (Path(folder) / "tests").mkdir(parents=True, exist_ok=True)
    (Path(folder) / "tests" / "test_all.py").write_text(SMOKE_SUITE, encoding="utf-8")
    return Path(folder)
