"""The intervals verdicts are read from: over problems (bootstrap), over seeds (t), over updates.

- :class:`ProblemBootstrap`: Pass@K of a method and paired differences between methods from the
  report's per-problem ``outcomes`` (see :mod:`~es_lightning.report.bootstrap`); one set of
  resamples is shared by every statistic of the report.
- :func:`seed_interval`: a number measured once per run (an entropy change, a drift ratio): mean
  ``x̄`` over ``n`` seeds with one-sided bounds ``x̄ ∓ t_{level, n−1} · sd/√n``.
- :func:`updates_interval`: a number measured every update (κ_pair): the mean of all updates'
  values with bounds ``∓ t_{level, n−1} · sd/√n`` over the ``n`` updates (treated as independent).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from es_lightning.report.bootstrap import (
    BOOTSTRAP,
    Interval,
    per_problem_pass_at_k,
    percentile_interval,
    resample_indices,
    resampled_means,
)
from es_lightning.report.stats import t_quantile

T_OVER_SEEDS = "t over seeds"
SE_OVER_UPDATES = "standard error over updates"


def seed_interval(data: Mapping[str, Any] | None, level: float) -> Interval | None:
    """One-sided t bounds of a JSON Stat over seeds; ``None`` with fewer than 2 seeds."""
    if not data or data["n"] < 2:
        return None
    half = t_quantile(level, data["n"] - 1) * data["sd"] / math.sqrt(data["n"])
    return Interval(data["mean"], data["mean"] - half, data["mean"] + half, level, T_OVER_SEEDS, data["n"])


def updates_interval(series: Mapping[Any, Sequence[float]], level: float) -> Interval | None:
    """The mean of every update's value over every run, with its standard error over updates."""
    values = np.array([float(v) for run in series.values() for v in run if math.isfinite(float(v))])
    if len(values) < 2:
        return None
    mean = float(values.mean())
    half = t_quantile(level, len(values) - 1) * float(values.std(ddof=1)) / math.sqrt(len(values))
    return Interval(mean, mean - half, mean + half, level, SE_OVER_UPDATES, len(values))


class ProblemBootstrap:
    """Pass@K intervals over the report's ``outcomes`` block, with one shared set of resamples."""

    def __init__(self, outcomes: Mapping[str, Any], level: float, resamples: int, seed: int) -> None:
        self.m: int = int(outcomes["m"])
        self.problems: list[str] = list(outcomes["problems"])
        self.counts = {
            method: {int(s): np.asarray(c, dtype=np.int64) for s, c in seeds.items()}
            for method, seeds in outcomes["counts"].items()
        }
        self.level = level
        self.indices = resample_indices(len(self.problems), resamples, seed)

    def has(self, method: str, k: int = 1) -> bool:
        return bool(self.counts.get(method)) and 1 <= k <= self.m

    def seeds(self, *methods: str) -> list[int]:
        """The seeds every one of ``methods`` has."""
        sets = [set(self.counts.get(m, {})) for m in methods]
        return sorted(set.intersection(*sets)) if sets else []

    def values(self, method: str, k: int, seeds: Sequence[int] | None = None) -> np.ndarray:
        """``(S, P)`` per-problem Pass@k of ``method`` on ``seeds`` (default: all it has)."""
        seeds = sorted(self.counts[method]) if seeds is None else seeds
        counts = np.stack([self.counts[method][s] for s in seeds])
        return per_problem_pass_at_k(counts, self.m, [k])[0]

    def resampled(self, values: np.ndarray) -> np.ndarray:
        """``(B,)`` pooled means of ``(S, P)`` values over the shared resamples."""
        return resampled_means(values, self.indices)

    def interval(self, values: np.ndarray, resampled: np.ndarray | None = None) -> Interval:
        resampled = self.resampled(values) if resampled is None else resampled
        return percentile_interval(float(values.mean()), resampled, self.level, len(self.problems), BOOTSTRAP)

    def pass_at_k(self, method: str, k: int) -> Interval | None:
        """Pass@k of ``method`` pooled over its seeds."""
        return self.interval(self.values(method, k)) if self.has(method, k) else None

    def difference(self, a: str, b: str, k: int) -> Interval | None:
        """Pass@k of ``a`` − ``b``, paired by problem and by the seeds both have."""
        seeds = self.seeds(a, b)
        if not seeds or not self.has(a, k) or not self.has(b, k):
            return None
        return self.interval(self.values(a, k, seeds) - self.values(b, k, seeds))
