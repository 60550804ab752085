"""Student's t quantile and tail, for intervals and tests over a few units: updates of one run, or seeds.

The per-update ES diagnostics (:mod:`es_lightning.es.run_signal`) and the report's intervals over
seeds (:mod:`es_lightning.report.stats`) both need it, and neither may pull in scipy for it.
"""

from __future__ import annotations

import math

__all__ = ["t_quantile", "t_sf"]


def t_quantile(level: float, df: int) -> float:
    """The ``level`` quantile of Student's t with ``df`` degrees of freedom.

    Exact for ``df`` 1 and 2 (``tan(π(p − ½))`` and ``(2p − 1)/√(2p(1 − p))``); above, the root of
    ``t_sf(t, df) = 1 − level`` by bisection, so a bound at ``level`` and the p-value of
    :func:`t_sf` always agree.

    >>> round(t_quantile(0.95, 1), 3), round(t_quantile(0.95, 2), 3), round(t_quantile(0.95, 10), 3)
    (6.314, 2.92, 1.812)
    """
    if df < 1:
        raise ValueError(f"t_quantile: df must be >= 1, got {df}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"t_quantile: level must be in (0, 1), got {level}")
    if df == 1:
        return math.tan(math.pi * (level - 0.5))
    if df == 2:
        return (2 * level - 1) / math.sqrt(2 * level * (1 - level))
    if level < 0.5:
        return -t_quantile(1.0 - level, df)
    low, high = 0.0, 1.0
    while t_sf(high, df) > 1.0 - level:
        low, high = high, 2 * high
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if t_sf(mid, df) > 1.0 - level else (low, mid)
        if high - low < 1e-13 * max(1.0, high):
            break
    return (low + high) / 2


def t_sf(t: float, df: int) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom (the one-sided p-value of ``t``).

    ``P(T > t) = ½ · I_{df/(df + t²)}(df/2, ½)`` for ``t ≥ 0`` (and ``1 −`` that below 0), with the
    regularized incomplete beta ``I`` from its continued fraction (modified Lentz).

    >>> round(t_sf(2.92, 2), 3), round(t_sf(1.812, 10), 3), t_sf(0.0, 4)
    (0.05, 0.05, 0.5)
    """
    if df < 1:
        raise ValueError(f"t_sf: df must be >= 1, got {df}")
    if math.isnan(t):
        raise ValueError("t_sf: t is NaN")
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    tail = 0.5 * _incomplete_beta(df / (df + t * t), df / 2, 0.5)
    return tail if t >= 0 else 1.0 - tail


def _incomplete_beta(x: float, a: float, b: float) -> float:
    """The regularized incomplete beta function ``I_x(a, b)`` (Numerical Recipes' ``betai``)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1) / (a + b + 2):
        return math.exp(log_front) * _beta_fraction(x, a, b) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(1 - x, b, a) / b


def _beta_fraction(x: float, a: float, b: float) -> float:
    tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h
