"""The run-level signal of ES: can T updates of N members add up to learning, whatever one shows?

One update's reliability ρ (:mod:`es_lightning.es.diagnostics`) says how well its member rewards
rank the members. Learning needs something else: that the *sum* of the run's updates moves the
weights uphill by more than the random walk that the same updates would make without any signal.
That is

    signal = √(ρ̄·N·T)        ρ̄ pooled over the run's applied updates, N members, T applied updates

(antithetic pairs: ρ̄_d of the pairs' differences and N the number of pairs).

Why. Linearise the expected reward J (over prompts and sampling) around the centre θ, with
g = ∇J and ĝ = g/|g|. Member i of an update sits at θ + σε_i; a_i = ĝ·ε_i are independent N(0, 1)
(ε_i standard normal in any dimension), and its measured reward is

    R_i = J(θ) + σ|g|·a_i + e_i       e_i: the evaluation's noise (prompts, sampling), independent of a_i

so ρ = σ²|g|² / (σ²|g|² + Var e) is the reliability of R_i and corr(R, a) = √ρ. The update
Δ = (α/N)·Σ_i z_i ε_i (z the z-scored R: Σ z_i = 0, Σ z_i² = N) changes J, to first order, by
g·Δ = (α|g|/N)·S with S = Σ_i z_i a_i, its component along the gradient. In the Gaussian model
a_i = √ρ·R̃_i + √(1 − ρ)·w_i (R̃ the standardised R, w independent of R), hence

    S = √ρ·N·s + √(1 − ρ)·ξ          s = the population sd of R̃ (E[s] ≈ 1 − 3/(4N), Var(s) ≈ 1/(2N)),
                                      ξ ~ N(0, N)
    E[S] ≈ √ρ·N·(1 − 3/(4N))          Var(S) = N·(1 − ρ) + ρ·N²·Var(s) ≈ N·(1 − ρ/2)

Each update draws new directions and prompts, so over T updates the run's first-order gain
G = (α|g|/N)·Σ_t S_t has E[G] / sd(G) = E[S]·√T / sd(S) ≈ √(ρ·N·T)·(1 − 3/(4N))·(1 + ρ/4): √(ρNT)
within a few per cent (−2.3 % at N = 32 for small ρ; ``tests/es/test_run_signal.py``
checks it by direct simulation). α, σ and |g| cancel. The noise term is exactly what the same run
with rewards that carry nothing does (ρ = 0: the permuted control, :mod:`es_lightning.es.control`),
so √(ρNT) is the expected z of the run's gain against its own permuted control's spread, before
any evaluation noise and before second-order effects (curvature: the damage of a random walk,
which can keep a run with a large signal from learning). Antithetic pairs: the update weighs ε_j
by z_{2j} − z_{2j+1} ∝ d_j = 2σ|g|·a_j + (e_{2j} − e_{2j+1}), the same algebra with the N/2 pairs
(N with ``antithetic_budget: directions``) and the reliability ρ_d of d_j.

Threshold 2: a run whose signal is below 2 has an expected gain within two standard deviations of
its random walk's, so it could not be resolved against its permuted control (one-sided 97.7 %)
even by a noiseless evaluation.

ρ̄ and its interval (:func:`reliability_interval`). ρ̄ = 2·r̄/(1 + r̄), r̄ the mean split-half
correlation of the applied updates whose value is defined (skipped updates moved nothing and carry
neither signal nor noise; :func:`applied`). The interval is Student's t over those updates (each
its own members and prompts: independent units), of r̄, mapped through Spearman–Brown (increasing,
so bounds map to bounds); the signal's bounds are √(max(bound, 0)·N·T).

What this means for diagnosing a run. One update's r_ab has sd ≈ 1/√N, so ρ̄ over T updates has
a standard error of about 2/√(NT), and at ρ̄ = 0 the signal's upper 97.5 % bound is about
2·(NT)^{1/4} (≈ 16 at N = 32, T = 120). A run can therefore add up (ρ̄ = 0.025 at N = 32,
T = 120 is a signal of 9.8) while no interval of ρ̄ excludes 0; excluding the signal a run needs
takes an upper bound of ρ̄ near 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from es_lightning.es.student_t import t_quantile

__all__ = [
    "ReliabilityInterval",
    "RunSignal",
    "applied",
    "measure_run_signal",
    "reliability_interval",
    "run_level_signal",
    "spearman_brown",
]


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


def reliability_interval(correlations: Sequence[float], level: float = 0.95) -> ReliabilityInterval:
    """ρ̄ = Spearman–Brown of the mean finite correlation, with the t interval of that mean over
    the updates mapped through Spearman–Brown (module docstring). Bounds are NaN with fewer than
    2 finite values; everything is NaN with none."""
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
    half = t_quantile((1.0 + level) / 2.0, n - 1) * float(finite.std(ddof=1)) / math.sqrt(n)
    return ReliabilityInterval(
        spearman_brown(mean), spearman_brown(mean - half), spearman_brown(mean + half), n, level
    )


def run_level_signal(reliability: float, directions: float, updates: float) -> float:
    """√(max(ρ, 0)·N·T): the expected z of the summed updates' gain against their noise (module
    docstring); NaN when ρ is NaN."""
    if not math.isfinite(reliability):
        return math.nan
    return math.sqrt(max(reliability, 0.0) * directions * updates)


@dataclass(frozen=True)
class RunSignal:
    """ρ̄ with its interval and the run-level signal with its bounds, of one run or a pooled group.

    ``updates``: all updates logged (of every run pooled); ``applied``: T, the applied updates per
    run; ``directions``: N (members, or antithetic pairs).
    """

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
    """The run-level signal of ``runs`` runs whose per-update correlations and skip flags are
    concatenated (one run: ``runs = 1``); T is their applied updates per run."""
    if directions < 1 or runs < 1:
        raise ValueError(f"directions and runs must be >= 1, got {directions}, {runs}")
    kept = applied(correlations, skipped)
    return RunSignal(reliability_interval(kept, level), directions, len(correlations), len(kept) / runs)
