"""Reward guard: refuse to optimize with a verifier whose reward error depends on the language.

Section 9 of "Multilingual verifier bias in RLVR" (arXiv 2608.20362): audit a
multilingual RLVR reward per language before optimizing with it. The GRPO stage
calls ``check_reward_verifier`` on a sample of rollouts: it computes the VLB of
the configured reward verifier against ``trusted`` (by default of ``Err``, the
reward error that enters the advantage; ``fnr`` and ``fpr`` are available) and
returns ``"ok"``, ``"warn"`` (VLB > ``warn_vlb``) or raises ``RewardBiasError``
(VLB > ``fail_vlb``; with ``raise_on_fail=False`` it returns ``"fail"``).
A VLB that is undefined (fewer than two languages with a defined rate) is ``ok``.
The trusted verifier itself has VLB 0 by definition.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from components.audit.diagnostics import RATE_NAMES, LanguageRates, diagnose, judge_rows

Status = Literal["ok", "warn", "fail"]


class RewardBiasError(RuntimeError):
    """The reward verifier's error rate differs too much between languages."""


@dataclass(frozen=True)
class GuardResult:
    """VLB of the reward verifier, its per-language rates, and the verdict."""

    vlb: float | None
    per_lang: Mapping[str, LanguageRates]
    status: Status
    verifier: str = ""
    metric: str = "err"
    errors: tuple[dict, ...] = ()


def guard_status(value: float | None, *, warn_vlb: float, fail_vlb: float) -> Status:
    """Classify a VLB against the two thresholds (strictly above = triggered).

    >>> [guard_status(v, warn_vlb=0.1, fail_vlb=0.3) for v in (None, 0.1, 0.2, 0.31)]
    ['ok', 'ok', 'warn', 'fail']
    """
    if warn_vlb > fail_vlb:
        raise ValueError(f"warn_vlb ({warn_vlb}) must not exceed fail_vlb ({fail_vlb})")
    if value is None or value <= warn_vlb:
        return "ok"
    return "warn" if value <= fail_vlb else "fail"


def check_reward_verifier(
    rows: Iterable[Mapping],
    verifier: str,
    *,
    warn_vlb: float,
    fail_vlb: float,
    metric: str = "err",
    reference: str = "trusted",
    raise_on_fail: bool = True,
) -> GuardResult:
    """Audit ``verifier`` on generation rows (``id, lang, gold, completion``) against ``reference``."""
    if metric not in RATE_NAMES:
        raise ValueError(f"unknown guard metric {metric!r} (known: {', '.join(RATE_NAMES)})")
    judgements, errors = judge_rows(rows, [verifier], reference=reference)
    diag = diagnose(judgements, [verifier])[verifier]
    value = diag.vlb[metric]
    status = guard_status(value, warn_vlb=warn_vlb, fail_vlb=fail_vlb)
    if status == "fail" and raise_on_fail:
        rates = ", ".join(f"{lang}={getattr(r, metric)}" for lang, r in diag.per_lang.items())
        raise RewardBiasError(
            f"reward verifier {verifier!r}: VLB({metric}) = {value:.3f} against {reference!r} exceeds "
            f"fail_vlb = {fail_vlb} (per language: {rates}); use a language-aware verifier "
            f"(e.g. {reference!r}) or raise the threshold"
        )
    return GuardResult(vlb=value, per_lang=diag.per_lang, status=status, verifier=verifier,
                       metric=metric, errors=tuple(errors))
