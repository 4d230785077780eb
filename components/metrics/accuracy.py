"""Accuracy over sampled completions: unbiased pass@k (Chen et al., 2021, "Evaluating Large
Language Models Trained on Code", eq. 1) and avg@k (the mean correctness over k samples, as
PCS reports avg@4 on MMATH).

pass@k for one problem with ``n`` samples of which ``c`` are correct is
``1 - C(n - c, k) / C(n, k)``, computed as a running product to stay exact for large ``n``.
Output names are ``pass_at_<k>`` / ``avg_at_<k>`` (MLflow rejects ``@``).

>>> pass_at_k(4, 1, 1), pass_at_k(4, 1, 2), pass_at_k(4, 0, 4), pass_at_k(4, 3, 2)
(0.25, 0.5, 0.0, 1.0)
>>> avg_at_k([True, False, True, True])
0.75
>>> pass_at_key(1), avg_at_key(4)
('pass_at_1', 'avg_at_4')
"""

from __future__ import annotations

from collections.abc import Sequence


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` samples with ``c`` correct (needs ``0 <= c <= n`` and ``1 <= k <= n``)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    failure = 1.0
    for m in range(n - c + 1, n + 1):
        failure *= 1.0 - k / m
    return 1.0 - failure


def avg_at_k(correct: Sequence[bool]) -> float:
    """Mean correctness over a problem's samples (avg@k with k = len(correct))."""
    if not correct:
        raise ValueError("avg@k needs at least one sample")
    return sum(bool(c) for c in correct) / len(correct)


def pass_at_key(k: int) -> str:
    """Output name for pass@k."""
    return f"pass_at_{k}"


def avg_at_key(k: int) -> str:
    """Output name for avg@k."""
    return f"avg_at_{k}"
