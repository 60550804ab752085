"""Percentage axes: inside [0, 100], at least MIN_SPAN points; the binomial standard error."""

from __future__ import annotations

import math

import pytest

from es_lightning.evaluation.percent_axis import MIN_SPAN, binomial_se, clamp_percent, percent_limits


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([47.70, 47.78], (42.74, 52.74)),  # 0.08 points: widened about the centre to 10
        ([99.0, 100.0], (90.0, 100.0)),  # near the top: shifted down, never above 100
        ([0.0, 0.5], (0.0, 10.0)),  # near the bottom: shifted up, never below 0
        ([10.0, 60.0], (7.5, 62.5)),  # a wide range keeps its 5 % margin
        ([-3.0, 104.0], (0.0, 100.0)),  # band edges past the ends are clamped
        ([], (0.0, 100.0)),
    ],
)
def test_percent_limits(values, expected):
    low, high = percent_limits(values)
    assert (low, high) == pytest.approx(expected)
    assert 0.0 <= low < high <= 100.0 and high - low >= MIN_SPAN - 1e-9


def test_binomial_se_and_clamp():
    assert binomial_se(0.5, 100) == pytest.approx(0.05)
    assert binomial_se(0.0, 100) == 0.0 and binomial_se(1.0, 7) == 0.0
    assert math.isnan(binomial_se(0.5, 0))
    assert (clamp_percent(-1.0), clamp_percent(50.0), clamp_percent(101.0)) == (0.0, 50.0, 100.0)
