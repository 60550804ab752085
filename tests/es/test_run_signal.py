"""The run-level signal √(ρ̄NT) against a direct simulation of ES's summed updates, and ρ̄'s
interval over updates against hand-worked numbers and its coverage on simulated batches."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest

import es_lightning.es.student_t as student_t
from es_lightning.es.diagnostics import split_half_correlation
from es_lightning.es.normalize import normalize_rewards
from es_lightning.es.run_signal import (
    applied,
    measure_run_signal,
    reliability_interval,
    run_level_signal,
    spearman_brown,
)


def test_student_t_doctests():
    assert doctest.testmod(student_t).failed == 0


def _summed_gradient_components(rng, rho: float, n: int, t: int, runs: int) -> np.ndarray:
    """Per simulated run, Σ_t Σ_i z_i a_i: the summed updates' component along the gradient
    (up to α|g|/N). Member i's direction has a_i = ĝ·ε_i ~ N(0, 1); its reward is
    √ρ·a_i + √(1 − ρ)·e_i (signal + noise, reliability ρ); z are its population z-scores."""
    a = rng.standard_normal((runs, t, n))
    rewards = math.sqrt(rho) * a + math.sqrt(1.0 - rho) * rng.standard_normal((runs, t, n))
    z = (rewards - rewards.mean(-1, keepdims=True)) / rewards.std(-1, keepdims=True)
    np.testing.assert_allclose(z[0, 0], normalize_rewards(rewards[0, 0], "zscore"))  # ES's z-scores
    return (z * a).sum(axis=(1, 2))


def _refined(rho: float, n: int, t: int) -> float:
    """The module docstring's ratio before its simplification: E[S] = √ρ·N·E[s] and
    Var(S) = N(1 − ρ) + ρN²·Var(s), s the population sd of n standard normals."""
    mean_s = math.sqrt(2.0 / n) * math.exp(math.lgamma(n / 2) - math.lgamma((n - 1) / 2))
    var_s = (n - 1) / n - mean_s**2
    return math.sqrt(rho) * n * mean_s * t / math.sqrt(t * (n * (1 - rho) + rho * n * n * var_s))


@pytest.mark.parametrize(
    ("rho", "n", "t"), [(0.01, 32, 120), (0.03, 32, 120), (0.05, 64, 30), (0.02, 16, 200), (0.3, 32, 30)]
)
def test_run_signal_is_the_z_of_the_summed_updates_against_their_noise(rho, n, t):
    """Simulated runs: mean/sd over runs of the summed gradient component matches the derivation
    within 3 Monte Carlo standard errors, and √(ρNT) within its stated 1 − 3/(4N) and 1 + ρ/4
    factors; with rewards that carry nothing (the permuted control) its mean is 0 and its sd the
    same, so the ratio is the gain's z against the control's spread."""
    rng = np.random.default_rng(7)
    runs = 3000
    summed = _summed_gradient_components(rng, rho, n, t, runs)
    null = _summed_gradient_components(rng, 0.0, n, t, runs)
    measured = summed.mean() / summed.std(ddof=1)
    mc_se = math.sqrt((1.0 + measured**2 / 2.0) / runs)  # of a mean/sd ratio
    assert abs(measured - _refined(rho, n, t)) < 3 * mc_se, (measured, _refined(rho, n, t), mc_se)
    simple = run_level_signal(rho, n, t)
    assert measured / simple == pytest.approx((1 - 3 / (4 * n)) * (1 + rho / 4), abs=3 * mc_se / simple)
    assert abs(null.mean()) < 3 * null.std() / math.sqrt(runs)
    assert null.std() == pytest.approx(summed.std(), rel=0.1)


def test_reliability_interval_by_hand():
    # r_ab 0.1, 0.3, 0.2: mean 0.2, sd 0.1, t(0.975, 2) = 4.303 → 0.2 ± 0.24843 → Spearman–Brown
    found = reliability_interval([0.1, math.nan, 0.3, 0.2])
    half = 4.302653 * 0.1 / math.sqrt(3)
    assert found.measured == 3 and found.level == 0.95
    assert found.reliability == pytest.approx(0.4 / 1.2)
    assert found.low == pytest.approx(2 * (0.2 - half) / (1 + 0.2 - half), rel=1e-4)
    assert found.high == pytest.approx(2 * (0.2 + half) / (1 + 0.2 + half), rel=1e-4)
    assert found.low == pytest.approx(-0.1018, abs=1e-4) and found.high == pytest.approx(0.6192, abs=1e-4)
    one = reliability_interval([0.5])
    assert one.reliability == pytest.approx(2 / 3) and math.isnan(one.low) and math.isnan(one.high)
    assert math.isnan(reliability_interval([math.nan]).reliability)
    same = reliability_interval([0.2, 0.2])
    assert same.low == same.high == same.reliability
    with pytest.raises(ValueError, match="level"):
        reliability_interval([0.1, 0.2], level=1.0)


def test_run_signal_by_hand():
    assert run_level_signal(0.25, 32, 120) == pytest.approx(math.sqrt(960))
    assert run_level_signal(-0.1, 32, 120) == 0.0  # no negative signal
    assert math.isnan(run_level_signal(math.nan, 32, 120))
    # two runs pooled: 6 updates, 1 skipped (its −1 left out), one undefined → 4 measured, T = 2.5
    correlations = [0.1, -1.0, 0.3, math.nan, 0.2, 0.2]
    skipped = [0, 1, 0, 0, 0, 0]
    assert applied(correlations, skipped)[:2] == [0.1, 0.3]
    found = measure_run_signal(correlations, skipped, directions=32, runs=2)
    assert found.updates == 6 and found.applied == 2.5 and found.interval.measured == 4
    assert found.excluded == pytest.approx(2 / 6)
    assert found.interval.reliability == pytest.approx(spearman_brown(0.2))
    assert found.signal[0] == pytest.approx(math.sqrt(spearman_brown(0.2) * 32 * 2.5))
    with pytest.raises(ValueError, match="3 correlations but 2 skip flags"):
        applied([0.0] * 3, [False] * 2)


def test_reliability_interval_covers_the_true_reliability():
    """Batches whose members differ by s_i (sd 0.1) under prompt noise (sd 1 per prompt, 64
    prompts): the batch reliability is 0.01/(0.01 + 1/64) = 0.39; the 95% interval over 30
    updates covers it in about 95% of 300 simulated runs (94% with this seed)."""
    rng = np.random.default_rng(11)
    n, p, t, runs = 32, 64, 30, 300
    true = 0.01 / (0.01 + 1.0 / p)
    covered = 0
    for _ in range(runs):
        s = rng.normal(0.0, 0.1, size=(t, n, 1))
        tables = s + rng.standard_normal((t, n, p))
        found = reliability_interval([split_half_correlation(table) for table in tables])
        covered += found.low <= true <= found.high
    assert 0.91 <= covered / runs <= 0.99, covered / runs
