"""The evidence a verdict reads, against plain computations: t p-values and bounds, the two-level
bootstrap as a loop, the union of the two tests, Holm's adjustment."""

from __future__ import annotations

import math

import numpy as np
import pytest

from es_lightning.report.evidence import Evidence, holm, seed_evidence
from es_lightning.report.intervals import ProblemBootstrap
from es_lightning.report.stats import t_quantile, t_sf


@pytest.mark.parametrize("df", [1, 2, 3, 4, 7, 30])
def test_t_sf_agrees_with_the_density_integrated_by_hand(df):
    const = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi))

    def density(x: float) -> float:
        return const * (1 + x * x / df) ** (-(df + 1) / 2)

    for t in (0.3, 1.0, 2.5):
        xs = np.linspace(0.0, t, 20001)
        mass = np.trapezoid([density(x) for x in xs], xs)
        assert t_sf(t, df) == pytest.approx(0.5 - mass, abs=1e-7)
        assert t_sf(-t, df) == pytest.approx(0.5 + mass, abs=1e-7)
    for level in (0.9, 0.95, 0.99):
        assert t_sf(t_quantile(level, df), df) == pytest.approx(1 - level, abs=1e-9)


def test_seed_level_p_value_and_bounds_by_hand():
    # per-seed values 0.01, 0.02, 0.03: mean 0.02, sd 0.01, t = 0.02 / (0.01/√3) = 3.464 on 2 df
    e = seed_evidence([0.01, 0.02, 0.03], 0.95)
    t = 0.02 / (0.01 / math.sqrt(3))
    assert e.p_greater() == pytest.approx(0.5 - t / (2 * math.sqrt(t * t + 2)))
    assert e.p_less() == pytest.approx(0.5 + t / (2 * math.sqrt(t * t + 2)))
    half = 2.919986 * 0.01 / math.sqrt(3)
    assert (e.interval().low, e.interval().high) == pytest.approx((0.02 - half, 0.02 + half), abs=1e-6)
    assert e.p_greater(0.05) > 0.5 and e.kind == "t over seeds"


def test_one_seed_rejects_nothing_and_has_no_interval():
    e = seed_evidence([0.4], 0.95)
    assert e.p_greater() == 1.0 and e.p_less() == 1.0
    assert math.isnan(e.interval().low)


def test_the_union_passes_only_where_both_tests_pass():
    # the seeds agree closely (t alone would pass), the bootstrap straddles 0 (it would not)
    resampled = np.linspace(-0.01, 0.05, 999)
    e = Evidence(0.02, (0.019, 0.020, 0.021), resampled, 0.95)
    assert e._t_p(0.0, True) < 0.01
    assert e.p_greater() == pytest.approx((1 + (resampled <= 0).sum()) / 1000)
    assert e.interval().low == pytest.approx(np.quantile(resampled, 0.05))
    assert e.interval().high == pytest.approx(
        max(np.quantile(resampled, 0.95), 0.02 + 0.001 * t_quantile(0.95, 2) / math.sqrt(3))
    )


def test_two_level_bootstrap_equals_a_plain_loop():
    rng = np.random.default_rng(3)
    values = rng.random((3, 7))  # (S, P)
    outcomes = {"m": 4, "problems": [f"p{i}" for i in range(7)], "counts": {}}
    boot = ProblemBootstrap(outcomes, 0.95, 50, seed=11)
    draws = boot.seed_draws(3)
    expected = [np.mean([values[draws[b, j]][boot.indices[b]].mean() for j in range(3)]) for b in range(50)]
    got = boot.evidence(values)
    assert got.resampled == pytest.approx(np.array(expected))
    assert got.per_seed == pytest.approx(tuple(values.mean(axis=1)))
    assert got.estimate == pytest.approx(values.mean())
    assert (boot.seed_draws(3) == draws).all()  # the same draws for every statistic on 3 seeds


def test_the_starting_model_evaluated_once_pairs_with_every_seed():
    outcomes = {
        "m": 2,
        "problems": ["a", "b"],
        "counts": {"base": {"0": [1, 2]}, "es": {"0": [2, 2], "1": [0, 2]}},
    }
    boot = ProblemBootstrap(outcomes, 0.95, 20, seed=0)
    assert boot.seeds("es", "base") == [0, 1]
    d = boot.difference_evidence("es", "base", 1)
    assert d.per_seed == pytest.approx((0.25, -0.25))  # seed 0: [1, 1] − [0.5, 1]; seed 1: [0, 1] − [0.5, 1]
    trained = {"m": 2, "problems": ["a"], "counts": {"es": {"0": [1], "1": [1]}, "other": {"0": [2]}}}
    assert ProblemBootstrap(trained, 0.95, 20, seed=0).seeds("es", "other") == [
        0
    ]  # a trained method is not broadcast


def test_holm_against_the_textbook_procedure():
    ps = [0.01, 0.04, 0.03, 0.2]
    # sorted: 0.01·4 = 0.04, 0.03·3 = 0.09, 0.04·2 = 0.08 → max so far 0.09, 0.2·1 = 0.2
    assert holm(ps) == pytest.approx([0.04, 0.09, 0.09, 0.2])
    assert holm([0.5]) == [0.5] and holm([]) == []
    assert holm([0.6, 0.6]) == [1.0, 1.0]
