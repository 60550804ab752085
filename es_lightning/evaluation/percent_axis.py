"""Percentage axes that cannot mislead: kept inside [0, 100] with at least :data:`MIN_SPAN` points,
and the evaluation's own noise to draw as a band (:func:`binomial_se`)."""

from __future__ import annotations

import math
from collections.abc import Iterable

MIN_SPAN = 10.0
"""The least span of a percentage axis, in points."""
Z_95 = 1.959964
"""The two-sided 95 % normal quantile of the noise bands."""


def clamp_percent(value: float) -> float:
    """``value`` (percent) limited to [0, 100]."""
    return min(100.0, max(0.0, value))


def percent_limits(values: Iterable[float], min_span: float = MIN_SPAN) -> tuple[float, float]:
    """Limits of a percentage axis showing ``values`` (points, band edges included): their range
    with a 5 % margin, widened about its centre to ``min_span`` and kept inside [0, 100].

    >>> percent_limits([47.70, 47.78]), percent_limits([99.0, 100.0]), percent_limits([10.0, 60.0])
    ((42.74, 52.74), (90.0, 100.0), (7.5, 62.5))
    """
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return 0.0, 100.0
    lo, hi = clamp_percent(min(finite)), clamp_percent(max(finite))
    margin = 0.05 * (hi - lo)
    lo, hi = lo - margin, hi + margin
    if hi - lo < min_span:
        centre = (lo + hi) / 2
        lo, hi = centre - min_span / 2, centre + min_span / 2
    if lo < 0.0:
        lo, hi = 0.0, min(100.0, hi - lo)
    if hi > 100.0:
        lo, hi = max(0.0, lo - (hi - 100.0)), 100.0
    return round(lo, 6), round(hi, 6)


def binomial_se(p: float, problems: float) -> float:
    """The standard error of an accuracy ``p`` measured on ``problems`` problems: √(p(1 − p)/P)
    (a bound for Pass@k, whose per-problem values lie in [0, 1]).

    >>> round(binomial_se(0.5, 100), 4)
    0.05
    """
    return math.sqrt(max(p * (1.0 - p), 0.0) / problems) if problems > 0 else math.nan
