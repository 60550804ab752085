"""Paired bootstrap over problems, pooled over seeds: the evaluation's sampling interval.

An evaluation of a method on seed ``s`` gives, for each of the ``P`` test problems ``i``, its
correct count ``c_{s,i}`` out of ``M`` samples. The unbiased per-problem Pass@K is

    a_{s,i}(k) = 1 − C(M − c_{s,i}, k) / C(M, k)

and the method's Pass@K is the mean over seeds and problems, ``(1/SP) Σ_s Σ_i a_{s,i}(k)``. A
statistic of several methods (a difference, a Pass@K at matched Pass@1) is recomputed on ``B``
resamples of the problems: each resample draws ``P`` problem indices with replacement, one draw
shared by every seed and every method, so methods stay paired by problem and by seed. Its
interval is the percentile interval of the ``B`` recomputed values: ``low`` is the ``1 − level``
quantile and ``high`` the ``level`` quantile, each a one-sided bound at ``level`` (together a
two-sided interval at ``2·level − 1``). The resamples are drawn from ``numpy``'s generator seeded
with ``seed``: the same inputs give the same interval.

The interval covers what a new draw of problems and of samples would change (the per-problem
values include each problem's own sampling noise); it does not cover training-seed variation
beyond the seeds pooled, which the per-seed tables show beside it.

    >>> per_problem_pass_at_k(np.array([[0, 1, 4]]), m=4, ks=[1, 4])[:, 0].tolist()
    [[0.0, 0.25, 1.0], [0.0, 1.0, 1.0]]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from es_lightning.errors import ConfigError

BOOTSTRAP = "paired bootstrap over problems"


@dataclass(frozen=True)
class Interval:
    """An estimate with its one-sided bounds at ``level``: ``low`` (the claim "above") and ``high``
    (the claim "below"); ``kind`` says where the spread comes from."""

    estimate: float
    low: float
    high: float
    level: float
    kind: str
    n: int
    """Problems (bootstrap), seeds (t over seeds) or updates (standard error over updates)."""
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = {
            "estimate": self.estimate,
            "low": self.low,
            "high": self.high,
            "level": self.level,
            "kind": self.kind,
            "n": self.n,
        }
        return out if self.note is None else {**out, "note": self.note}


def per_problem_pass_at_k(counts: np.ndarray, m: int, ks: Sequence[int]) -> np.ndarray:
    """Unbiased Pass@K of every problem: ``(K, *counts.shape)`` from correct counts out of ``m``.

    ``C(m − c, k) / C(m, k) = Π_{j=0}^{c−1} (1 − k/(m − j))``: a table of that product for
    ``c = 0..m`` (it reaches exactly 0 once ``m − c < k``) indexed by the counts.
    """
    counts = np.asarray(counts)
    if counts.size and (counts.min() < 0 or counts.max() > m):
        raise ConfigError(f"per_problem_pass_at_k: correct counts must lie in [0, {m}]")
    bad = [k for k in ks if not 1 <= k <= m]
    if bad:
        raise ConfigError(f"per_problem_pass_at_k: k {bad} outside 1..M={m}")
    k_arr = np.asarray(ks, dtype=np.float64)[:, None]  # (K, 1)
    terms = 1.0 - k_arr / np.arange(m, 0, -1, dtype=np.float64)[None, :]  # (K, m): 1 − k/m, 1 − k/(m−1), ...
    ratio = np.concatenate([np.ones((len(ks), 1)), np.cumprod(terms, axis=1)], axis=1)  # (K, m + 1)
    ratio = np.clip(ratio, 0.0, 1.0)  # past j = m − k the product is an exact 0 times negatives
    return 1.0 - ratio[:, counts]


def resample_indices(n_problems: int, n_resamples: int, seed: int) -> np.ndarray:
    """``(B, P)`` problem indices drawn with replacement (row ``b`` is resample ``b``)."""
    if n_problems < 1:
        raise ConfigError("bootstrap: no problems to resample")
    if n_resamples < 1:
        raise ConfigError(f"bootstrap: resamples must be >= 1, got {n_resamples}")
    return np.random.default_rng(seed).integers(0, n_problems, size=(n_resamples, n_problems))


def resampled_means(per_problem: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Mean over seeds and resampled problems: ``(..., S, P)`` values → ``(..., B)``.

    The seeds are averaged first (every seed shares the resample), then each resample's problems."""
    pooled = np.asarray(per_problem, dtype=np.float64).mean(axis=-2)  # (..., P)
    return pooled[..., indices].mean(axis=-1)  # (..., B)


def percentile_interval(
    estimate: float, resampled: np.ndarray, level: float, n: int, kind: str = BOOTSTRAP
) -> Interval:
    """The one-sided bounds at ``level`` of ``resampled`` (NaN resamples are an error here)."""
    check_level(level)
    values = np.asarray(resampled, dtype=np.float64)
    if np.isnan(values).any():
        raise ValueError("percentile_interval: NaN among the resampled values")
    low, high = np.quantile(values, [1.0 - level, level])
    return Interval(float(estimate), float(low), float(high), level, kind, n)


def check_level(level: float) -> None:
    if not 0.5 < level < 1.0:
        raise ConfigError(f"confidence level must be in (0.5, 1), got {level}")


def bootstrap_mean(per_problem: np.ndarray, level: float, resamples: int, seed: int) -> Interval:
    """Interval of the mean of ``(S, P)`` per-problem values (e.g. a paired difference)."""
    values = np.asarray(per_problem, dtype=np.float64)
    indices = resample_indices(values.shape[-1], resamples, seed)
    return percentile_interval(
        float(values.mean()), resampled_means(values, indices), level, values.shape[-1]
    )
