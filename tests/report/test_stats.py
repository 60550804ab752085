"""Mean ± sample sd over seeds, paired differences, and the cell formats."""

from __future__ import annotations

import doctest
import math

import pytest

import es_lightning.report.stats as stats
from es_lightning.report.stats import fmt_number, fmt_stat, paired_difference, paired_ratio, stat, t_quantile


def test_stat_hand_computed():
    s = stat([1.0, 2.0, 4.0])
    assert s.mean == pytest.approx(7 / 3)
    assert s.sd == pytest.approx(math.sqrt(((1 - 7 / 3) ** 2 + (2 - 7 / 3) ** 2 + (4 - 7 / 3) ** 2) / 2))
    assert s.n == 3 and s.seeds is None


def test_one_value_has_no_spread_and_none_is_none():
    assert stat([0.3]).sd == 0.0
    assert stat([]) is None
    assert stat({}) is None


def test_seeds_are_kept_in_order():
    s = stat({2: 0.5, 0: 0.1})
    assert s.seeds == [0, 2] and s.values == [0.1, 0.5]


def test_paired_difference_uses_shared_seeds_only():
    d = paired_difference({0: 0.7, 1: 0.6, 2: 0.9}, {0: 0.5, 1: 0.5})
    assert d.seeds == [0, 1] and d.values == [0.2, 0.1]
    assert paired_difference({0: 1.0}, {1: 1.0}) is None


def test_paired_ratio_skips_zero_denominators():
    r = paired_ratio({0: 4.0, 1: 3.0}, {0: 0.1, 1: 0.0})
    assert r.values == [40.0] and r.n == 1


def test_formats():
    assert fmt_number(0.4567, 100) == "45.7"
    assert fmt_number(0.02, 100, sign=True) == "+2.0"
    assert fmt_stat(None) == "–"
    assert fmt_stat(stat([0.5]).to_json(), 100) == "50.0"
    assert fmt_stat(stat([0.5, 0.7]).to_json(), 100) == "60.0 ± 14.1"
    assert fmt_stat(stat([0.001, 0.002]).to_json(), spec=".3g") == "0.0015 ± 0.000707"


def test_doctests():
    assert doctest.testmod(stats).failed == 0


@pytest.mark.parametrize(
    ("df", "table"),
    [(1, 6.314), (2, 2.920), (3, 2.353), (4, 2.132), (5, 2.015), (10, 1.812), (30, 1.697), (120, 1.658)],
)
def test_t_quantile_against_the_tables(df, table):
    assert t_quantile(0.95, df) == pytest.approx(table, rel=3e-3)


def test_t_quantile_two_sided_levels():
    assert t_quantile(0.975, 2) == pytest.approx(4.303, rel=1e-3)
    assert t_quantile(0.975, 10) == pytest.approx(2.228, rel=3e-3)
