"""The evidence a verdict reads: the seed-level t test and the two-level bootstrap, together.

A comparison of methods trained on ``S`` seeds and evaluated on ``P`` problems varies with the
problems drawn (and each problem's ``M`` samples) and with the training seeds run. Two tests
each cover one side better, and a claim must pass both:

- **seed-level t**: the statistic on each seed alone, ``x_1..x_S``, and the one-sided t test of
  their mean, ``t = (x̄ − θ) / (s/√S)`` with ``S − 1`` degrees of freedom. It carries the seeds'
  spread (and each seed's own evaluation noise, which is inside ``x_s``); it cannot run on one seed.
- **two-level bootstrap** (seeds × problems): each resample draws ``S`` seeds with replacement and
  ``P`` problems with replacement (one draw shared by every method, so methods stay paired by seed
  and problem) and recomputes the pooled statistic. It carries the noise of a statistic every seed
  shares (the starting model's one evaluation), which the seed-level t cannot see.

The p-value of "the statistic exceeds ``θ``" is the larger of the two tests' (``p_t`` and the
bootstrap's ``(1 + #{resamples ≤ θ}) / (B + 1)``), and the interval shown is the union of the t
interval and the percentile interval: a bound passes only where both do. A number measured once
per run (a drift, an entropy change) has no problems to resample and reads the seed-level t alone.

    >>> e = Evidence(0.02, (0.01, 0.02, 0.03), None, 0.95)
    >>> round(e.p_greater(0.0), 4), round(e.interval().low, 4)
    (0.0371, 0.0031)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from es_lightning.report.bootstrap import Interval
from es_lightning.report.stats import t_quantile, t_sf

BOTH = "seed t ∪ two-level bootstrap (seeds × problems)"
SEED_T = "t over seeds"


@dataclass(frozen=True)
class Evidence:
    """A statistic with what its tests need."""

    estimate: float
    """The statistic with every seed and problem pooled."""
    per_seed: tuple[float, ...]
    """The statistic of each seed alone (the seed-level t's data)."""
    resampled: np.ndarray | None
    """``(B,)`` two-level bootstrap values; ``None`` for a number measured once per run."""
    level: float

    @property
    def n_seeds(self) -> int:
        return len(self.per_seed)

    def _t_p(self, threshold: float, greater: bool) -> float:
        n = self.n_seeds
        if n < 2:
            return 1.0
        mean = sum(self.per_seed) / n
        sd = math.sqrt(sum((x - mean) ** 2 for x in self.per_seed) / (n - 1))
        gap = (mean - threshold) if greater else (threshold - mean)
        if sd == 0.0:
            return 0.0 if gap > 0 else 1.0
        return t_sf(gap / (sd / math.sqrt(n)), n - 1)

    def _boot_p(self, threshold: float, greater: bool) -> float:
        if self.resampled is None:
            return 0.0
        values = np.asarray(self.resampled)
        against = int((values <= threshold).sum() if greater else (values >= threshold).sum())
        return (1 + against) / (len(values) + 1)

    def p_greater(self, threshold: float = 0.0) -> float:
        """The p-value of "the statistic exceeds ``threshold``" (H0: it does not)."""
        return max(self._t_p(threshold, True), self._boot_p(threshold, True))

    def p_less(self, threshold: float = 0.0) -> float:
        """The p-value of "the statistic lies below ``threshold``"."""
        return max(self._t_p(threshold, False), self._boot_p(threshold, False))

    def interval(self) -> Interval:
        """The union of the seed-level t interval and the bootstrap's percentile interval (one-sided
        bounds at ``level``); NaN bounds on one seed without a bootstrap."""
        lows, highs = [], []
        n = self.n_seeds
        if n >= 2:
            mean = sum(self.per_seed) / n
            sd = math.sqrt(sum((x - mean) ** 2 for x in self.per_seed) / (n - 1))
            half = t_quantile(self.level, n - 1) * sd / math.sqrt(n)
            lows.append(mean - half)
            highs.append(mean + half)
        if self.resampled is not None:
            low, high = np.quantile(np.asarray(self.resampled), [1.0 - self.level, self.level])
            lows.append(float(low))
            highs.append(float(high))
        if not lows or n < 2:
            return Interval(self.estimate, math.nan, math.nan, self.level, self.kind, n)
        return Interval(self.estimate, min(lows), max(highs), self.level, self.kind, n)

    @property
    def kind(self) -> str:
        return SEED_T if self.resampled is None else BOTH

    def to_json(self) -> dict[str, Any]:
        return {**self.interval().to_json(), "per_seed": [round(x, 12) for x in self.per_seed]}


def seed_evidence(values: Sequence[float], level: float) -> Evidence:
    """A number measured once per run, on each seed: the seed-level t alone."""
    values = tuple(float(v) for v in values)
    estimate = sum(values) / len(values) if values else math.nan
    return Evidence(estimate, values, None, level)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values: the ``i``-th smallest ``p_(i)`` becomes
    ``max_{j ≤ i} min(1, (m − j + 1) · p_(j))``; rejecting where the adjusted value is below α keeps
    the chance of any false "reproduced" in the family at most α.

    >>> holm([0.01, 0.04, 0.03])
    [0.03, 0.06, 0.06]
    """
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        adjusted[i] = round(running, 15)
    return adjusted
