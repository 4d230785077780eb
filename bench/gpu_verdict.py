"""The GPU check's verdict: which paths ran on the GPU and passed, which were skipped (and why), which failed.

A path counts as verified only when it ran on CUDA and met its own expectation: a training or
generation part that finished, greedy CUDA outputs equal to the CPU's (``same_greedy_as_cpu``),
a pytest test that passed. Everything else is not verified: a part that raised or disagreed is
*failed*; a part that did not run on the GPU (no CUDA device, no vLLM or pytest in the
interpreter, a test's own ``pytest.skip``, tests only collected, a section that needs more
devices than the host has) is *skipped*, with the reason. Per-test outcomes are read from
pytest's JUnit XML (``--junitxml``): a ``<failure>`` or ``<error>`` child fails the test, a
``<skipped>`` child skips it with its message.

Exit codes (:func:`exit_code`): 0 every path verified; 1 some path failed; 2 none failed but some
path was not verified. ``--smoke`` (a CPU dry-run that claims nothing about a GPU) exits 1 on a
failure and 0 otherwise; its table still says that nothing ran on a GPU. Written by hand: the
bookkeeping is this check's own.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

RUN, SKIPPED, FAILED = "run", "skipped", "failed"


@dataclass(frozen=True)
class PathOutcome:
    path: str
    status: str  # RUN, SKIPPED or FAILED
    why: str = ""


def part_outcome(name: str, result: dict, device: str) -> PathOutcome:
    """The outcome of one in-process part (sft, grpo, generation, agreement) from its report entry."""
    if "error" in result:
        return PathOutcome(name, FAILED, result["error"])
    if "skipped" in result:
        return PathOutcome(name, SKIPPED, result["skipped"])
    if result.get("same_greedy_as_cpu") is False:
        return PathOutcome(name, FAILED, f"greedy outputs on {device} differ from the CPU's")
    if device != "cuda":
        return PathOutcome(name, SKIPPED, f"ran on {device}, not on a GPU")
    return PathOutcome(name, RUN)


def junit_outcomes(path: Path, device: str) -> list[PathOutcome]:
    """One outcome per test case of a pytest JUnit XML report (a passed test on CPU is not a GPU run)."""
    outcomes = []
    for case in ElementTree.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname', '').replace('.', '/')}.py::{case.get('name')}"
        failure = case.find("failure") if case.find("failure") is not None else case.find("error")
        skipped = case.find("skipped")
        if failure is not None:
            outcomes.append(PathOutcome(name, FAILED, (failure.get("message") or "")[:200]))
        elif skipped is not None:
            outcomes.append(PathOutcome(name, SKIPPED, (skipped.get("message") or "")[:200]))
        elif device != "cuda":
            outcomes.append(PathOutcome(name, SKIPPED, f"passed on {device}, not on a GPU"))
        else:
            outcomes.append(PathOutcome(name, RUN))
    return outcomes


def exit_code(outcomes: list[PathOutcome], smoke: bool = False) -> int:
    if not outcomes or any(o.status == FAILED for o in outcomes):
        return 1
    if smoke:
        return 0
    return 2 if any(o.status != RUN for o in outcomes) else 0


def table(outcomes: list[PathOutcome]) -> str:
    """A plain-text table: path, status, reason; then a one-line summary with the counts."""
    width = max(len(o.path) for o in outcomes)
    lines = [f"{'path'.ljust(width)}  status   why", f"{'-' * width}  -------  ---"]
    lines += [f"{o.path.ljust(width)}  {o.status.ljust(7)}  {o.why}".rstrip() for o in outcomes]
    counts = {status: sum(o.status == status for o in outcomes) for status in (RUN, SKIPPED, FAILED)}
    verified = "every path verified on the GPU" if counts[RUN] == len(outcomes) else "NOT verified"
    lines.append(f"{counts[RUN]} run, {counts[SKIPPED]} skipped, {counts[FAILED]} failed: {verified}")
    return "\n".join(lines)
