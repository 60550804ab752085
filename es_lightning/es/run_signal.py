"""The run-level signal of ES: can T updates of N members add up to learning, whatever one shows?

    signal = √(ρ̄·N·T)        ρ̄ pooled over the run's applied updates, N members, T applied updates

(antithetic pairs: ρ̄_d of the pairs' differences, N the number of pairs).

Why. Linearise the expected reward J around θ, g = ∇J, ĝ = g/|g|. Member i's a_i = ĝ·ε_i are
independent N(0, 1) and its reward is R_i = J(θ) + σ|g|·a_i + e_i (e_i: evaluation noise), so
ρ = σ²|g|² / (σ²|g|² + Var e) and corr(R, a) = √ρ. The update Δ = (α/N)·Σ_i z_i ε_i changes J by
g·Δ = (α|g|/N)·S, S = Σ_i z_i a_i. With a_i = √ρ·R̃_i + √(1 − ρ)·w_i (R̃ standardised, w independent)::

    S = √ρ·N·s + √(1 − ρ)·ξ          s = the population sd of R̃, ξ ~ N(0, N)
    E[S] ≈ √ρ·N·(1 − 3/(4N))          Var(S) ≈ N·(1 − ρ/2)

so over T independent updates E[G]/sd(G) ≈ √(ρ·N·T) within a few per cent
(``tests/es/test_run_signal.py`` checks it by simulation). α, σ and |g| cancel, and the noise term
is what the permuted control (ρ = 0) does: the signal is the expected z of the run's gain against
its control's spread, to first order. Below 2 a gain could not be resolved from the control even by
a noiseless evaluation.

ρ̄ = 2·r̄/(1 + r̄), r̄ the mean split-half correlation of the applied updates (:func:`applied`); its
interval is Student's t over updates mapped through Spearman–Brown (:func:`reliability_interval`),
and the signal's bounds are √(max(bound, 0)·N·T).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from es_lightning.es.student_t import t_quantile


@dataclass(frozen=True)
class ReliabilityInterval:
    """ρ̄ over updates and its two-sided ``level`` interval (t over the ``measured`` updates)."""

    reliability: float
    low: float
    high: float
    measured: int
    level: float


def spearman_brown(correlation: float) -> float:
    """2r / (1 + r), clipped to [−1, 1] (it is ≤ −1 for r ≤ −1/3); NaN stays NaN."""
    if not np.isfinite(correlation):
        return float("nan")
    if correlation <= -1.0 / 3.0:
        return -1.0
    return float(np.clip(2.0 * correlation / (1.0 + correlation), -1.0, 1.0))


def applied(correlations: Sequence[float], skipped: Sequence[bool | float]) -> list[float]:
    """The split-half correlations of the updates that moved the weights (``skipped`` false)."""
    if len(correlations) != len(skipped):
        raise ValueError(f"{len(correlations)} correlations but {len(skipped)} skip flags")
    return [float(c) for c, s in zip(correlations, skipped) if not float(s) > 0]


@lru_cache(maxsize=1024)
def _t_quantile(level: float, df: int) -> float:
    """:func:`t_quantile`, remembered: a run is judged again and again at the same few degrees of
    freedom (the monitor every window, a report over many runs), and each is a bisection."""
    return t_quantile(level, df)


def reliability_interval(correlations: Sequence[float], level: float = 0.95) -> ReliabilityInterval:
    """ρ̄ with the t interval of the mean finite correlation mapped through Spearman–Brown."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    values = np.asarray(correlations, dtype=np.float64)
    finite = values[np.isfinite(values)]
    n = int(finite.size)
    if n == 0:
        return ReliabilityInterval(math.nan, math.nan, math.nan, 0, level)
    mean = float(finite.mean())
    if n == 1:
        return ReliabilityInterval(spearman_brown(mean), math.nan, math.nan, 1, level)
    half = _t_quantile((1.0 + level) / 2.0, n - 1) * float(finite.std(ddof=1)) / math.sqrt(n)
    return ReliabilityInterval(
        spearman_brown(mean), spearman_brown(mean - half), spearman_brown(mean + half), n, level
    )


def run_level_signal(reliability: float, directions: float, updates: float) -> float:
    """√(max(ρ, 0)·N·T), NaN when ρ is NaN."""
    if not math.isfinite(reliability):
        return math.nan
    return math.sqrt(max(reliability, 0.0) * directions * updates)


@dataclass(frozen=True)
class RunSignal:
    """ρ̄ with its interval and the run-level signal with its bounds (``applied``: T, ``directions``: N)."""

    interval: ReliabilityInterval
    directions: int
    updates: int
    applied: float

    @property
    def excluded(self) -> float:
        """The share of updates left out of ρ̄ (skipped, or a half that did not vary)."""
        return 1.0 - self.interval.measured / self.updates if self.updates else math.nan

    @property
    def signal(self) -> tuple[float, float, float]:
        """√(ρ̄NT) and its bounds, from ρ̄'s."""
        i = self.interval
        estimate, low, high = (
            run_level_signal(r, self.directions, self.applied) for r in (i.reliability, i.low, i.high)
        )
        return estimate, low, high


def measure_run_signal(
    correlations: Sequence[float],
    skipped: Sequence[bool | float],
    directions: int,
    runs: int = 1,
    level: float = 0.95,
) -> RunSignal:
    """The run-level signal of ``runs`` runs' concatenated correlations and skip flags."""
    if directions < 1 or runs < 1:
        raise ValueError(f"directions and runs must be >= 1, got {directions}, {runs}")
    kept = applied(correlations, skipped)
    return RunSignal(reliability_interval(kept, level), directions, len(correlations), len(kept) / runs)
