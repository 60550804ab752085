"""The unbiased Pass@K estimator: how often at least one of K samples is correct.

With ``c`` of ``n`` samples correct (Chen et al. 2021)::

    pass@k = 1 - C(n - c, k) / C(n, k) = 1 - Π_{i=n-c+1}^{n} (1 - k/i)

the product form, which stays in [0, 1] where the binomials overflow, is what is computed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def _check_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"pass@k: {name} must be an int, got {type(value).__name__} {value!r}")
    return int(value)


def _check(n: int, c: int, k: int) -> tuple[int, int, int]:
    n, c, k = _check_int("n", n), _check_int("c", c), _check_int("k", k)
    if n < 1:
        raise ValueError(f"pass@k: n (samples per prompt) must be >= 1, got n={n}")
    if k < 1:
        raise ValueError(f"pass@k: k must be >= 1, got k={k}")
    if k > n:
        raise ValueError(f"pass@k: k must be <= n (samples per prompt), got k={k} > n={n}")
    if c < 0:
        raise ValueError(f"pass@k: c (correct samples) must be >= 0, got c={c}")
    if c > n:
        raise ValueError(f"pass@k: c (correct samples) must be <= n, got c={c} > n={n}")
    return n, c, k


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased Pass@K of one prompt with ``c`` of ``n`` samples correct."""
    n, c, k = _check(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def pass_at_k_curve(
    correct_counts: Sequence[int], n: int, ks: Sequence[int] | None = None
) -> dict[int, float]:
    """``{k: mean pass@k}`` over prompts with ``correct_counts`` of ``n``, all ``k`` in one product."""
    n = _check_int("n", n)
    if n < 1:
        raise ValueError(f"pass@k: n (samples per prompt) must be >= 1, got n={n}")
    counts = [_check_int(f"correct_counts[{p}]", c) for p, c in enumerate(correct_counts)]
    if not counts:
        raise ValueError("pass_at_k_curve: correct_counts is empty (no prompts to average over)")
    for p, c in enumerate(counts):
        if not 0 <= c <= n:
            raise ValueError(f"pass_at_k_curve: correct_counts[{p}]={c} is outside [0, n={n}]")
    ks = list(range(1, n + 1)) if ks is None else [_check_int("k", k) for k in ks]
    if not ks:
        raise ValueError("pass_at_k_curve: ks is empty")
    for k in ks:
        _check(n, 0, k)

    k_arr = np.asarray(ks, dtype=np.float64)[:, None]  # (K, 1)
    i_desc = np.arange(n, 0, -1, dtype=np.float64)[None, :]  # (1, n): n, n-1, ..., 1
    ratios = np.cumprod(1.0 - k_arr / i_desc, axis=1)  # ratios[:, c-1] = Π over the first c terms
    ratios = np.concatenate([np.ones((len(ks), 1)), ratios], axis=1)  # column c for c = 0..n
    ratios = np.clip(ratios, 0.0, 1.0)  # terms past i = k are negative but multiply an exact 0
    per_prompt = 1.0 - ratios[:, np.asarray(counts)]  # (K, P)
    means = per_prompt.mean(axis=1)
    return {k: float(m) for k, m in zip(ks, means, strict=True)}
