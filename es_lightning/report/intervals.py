"""The intervals verdicts are read from: over problems (bootstrap), over seeds (t), over updates.

- :class:`ProblemBootstrap`: Pass@K of a method and paired differences between methods from the
  report's per-problem ``outcomes`` (see :mod:`~es_lightning.report.bootstrap`); one set of
  resamples is shared by every statistic of the report. :meth:`ProblemBootstrap.evidence` adds the
  seeds: per-seed values and the two-level bootstrap (seeds × problems) a verdict reads
  (:mod:`~es_lightning.report.evidence`).
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
from es_lightning.report.evidence import Evidence
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


def fixed_model(name: str) -> bool:
    """The starting model and its evaluations at other temperatures (``base``, ``base@T0.4``):
    no training seed changes them, so one evaluation pairs with every seed."""
    return name == "base" or name.startswith("base@")


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
        self.seed = seed
        self.indices = resample_indices(len(self.problems), resamples, seed)

    def has(self, method: str, k: int = 1) -> bool:
        return bool(self.counts.get(method)) and 1 <= k <= self.m

    def seeds(self, *methods: str) -> list[int]:
        """The seeds every one of ``methods`` has (the starting model, evaluated once, goes with
        any seed: see :func:`fixed_model`)."""
        sets = [set(self.counts.get(m, {})) for m in methods if not self._broadcast(m)]
        if not sets:
            sets = [set(self.counts.get(m, {})) for m in methods]
        return sorted(set.intersection(*sets)) if sets else []

    def _broadcast(self, method: str) -> bool:
        return fixed_model(method) and len(self.counts.get(method, {})) == 1

    def values(self, method: str, k: int, seeds: Sequence[int] | None = None) -> np.ndarray:
        """``(S, P)`` per-problem Pass@k of ``method`` on ``seeds`` (default: all it has)."""
        seeds = sorted(self.counts[method]) if seeds is None else seeds
        own = self.counts[method]
        if self._broadcast(method):
            own = {s: next(iter(own.values())) for s in seeds}
        counts = np.stack([own[s] for s in seeds])
        return per_problem_pass_at_k(counts, self.m, [k])[0]

    def resampled(self, values: np.ndarray) -> np.ndarray:
        """``(B,)`` pooled means of ``(S, P)`` values over the shared resamples."""
        return resampled_means(values, self.indices)

    def interval(self, values: np.ndarray, resampled: np.ndarray | None = None) -> Interval:
        resampled = self.resampled(values) if resampled is None else resampled
        return percentile_interval(float(values.mean()), resampled, self.level, len(self.problems), BOOTSTRAP)

    def seed_draws(self, n_seeds: int) -> np.ndarray:
        """``(B, n_seeds)`` seed positions drawn with replacement, the same for every statistic on
        that many seeds (seeded by the report's bootstrap seed and ``n_seeds``)."""
        return np.random.default_rng([self.seed, n_seeds]).integers(
            0, n_seeds, size=(len(self.indices), n_seeds)
        )

    def per_seed_resampled(self, values: np.ndarray) -> np.ndarray:
        """``(..., S, P)`` per-problem values → ``(..., S, B)``: each seed's mean on every problem
        resample."""
        return np.asarray(values, dtype=np.float64)[..., self.indices].mean(axis=-1)

    def two_level(self, per_seed: np.ndarray) -> np.ndarray:
        """``(..., S, B)`` per-seed resampled means → ``(..., B)``: resample ``b`` averages the
        seeds of draw ``b`` (with replacement) at problem resample ``b``."""
        per_seed = np.asarray(per_seed)
        draws = self.seed_draws(per_seed.shape[-2]).T  # (S, B)
        index = np.broadcast_to(draws, per_seed.shape)
        return np.take_along_axis(per_seed, index, axis=-2).mean(axis=-2)

    def evidence(self, values: np.ndarray) -> Evidence:
        """The evidence on the mean of ``(S, P)`` per-problem values (e.g. a paired difference)."""
        values = np.asarray(values, dtype=np.float64)
        per_seed = tuple(float(x) for x in values.mean(axis=-1))
        resampled = self.two_level(self.per_seed_resampled(values))
        return Evidence(float(values.mean()), per_seed, resampled, self.level)

    def difference_evidence(self, a: str, b: str, k: int) -> Evidence | None:
        """Pass@k of ``a`` − ``b``, paired by problem and by the seeds both have."""
        seeds = self.seeds(a, b)
        if not seeds or not self.has(a, k) or not self.has(b, k):
            return None
        return self.evidence(self.values(a, k, seeds) - self.values(b, k, seeds))

    def pass_at_k(self, method: str, k: int) -> Interval | None:
        """Pass@k of ``method`` pooled over its seeds."""
        return self.interval(self.values(method, k)) if self.has(method, k) else None

    def difference(self, a: str, b: str, k: int) -> Interval | None:
        """Pass@k of ``a`` − ``b``, paired by problem and by the seeds both have."""
        seeds = self.seeds(a, b)
        if not seeds or not self.has(a, k) or not self.has(b, k):
            return None
        return self.interval(self.values(a, k, seeds) - self.values(b, k, seeds))
