"""Per-problem Pass@K and the paired bootstrap over problems, against plain loops."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import es_lightning.report.bootstrap as bootstrap
from es_lightning.errors import ConfigError
from es_lightning.evaluation.pass_at_k import pass_at_k
from es_lightning.report.bootstrap import (
    bootstrap_mean,
    per_problem_pass_at_k,
    resample_indices,
    resampled_means,
)


def test_per_problem_pass_at_k_matches_the_scalar_estimator():
    m, ks = 16, [1, 2, 5, 16]
    counts = np.array([[0, 1, 3, 8], [15, 16, 2, 0]])
    got = per_problem_pass_at_k(counts, m, ks)
    assert got.shape == (4, 2, 4)
    for a, k in enumerate(ks):
        for s in range(2):
            for i in range(4):
                assert got[a, s, i] == pytest.approx(pass_at_k(m, int(counts[s, i]), k), abs=1e-12)


def test_hand_worked_value():
    # 1 − C(2, 2)/C(4, 2) = 1 − 1/6 with 2 correct of 4 at k = 2
    assert per_problem_pass_at_k(np.array([2]), 4, [2])[0, 0] == pytest.approx(5 / 6)


def test_bootstrap_equals_a_plain_loop():
    rng = np.random.default_rng(3)
    values = rng.random((3, 7))  # (S, P)
    indices = resample_indices(7, 50, seed=11)
    means = resampled_means(values, indices)
    for b in range(50):
        total = 0.0
        for s in range(3):
            for i in indices[b]:
                total += values[s, i]
        assert means[b] == pytest.approx(total / (3 * 7), abs=1e-12)
    interval = bootstrap_mean(values, level=0.9, resamples=50, seed=11)
    assert interval.estimate == pytest.approx(values.mean())
    assert interval.low == pytest.approx(np.quantile(means, 0.1))
    assert interval.high == pytest.approx(np.quantile(means, 0.9))


def test_seeded_and_deterministic():
    values = np.random.default_rng(0).random((2, 30))
    a = bootstrap_mean(values, 0.95, 500, seed=1)
    assert a == bootstrap_mean(values, 0.95, 500, seed=1)
    assert a != bootstrap_mean(values, 0.95, 500, seed=2)


def test_bad_input_is_named():
    with pytest.raises(ConfigError, match="correct counts"):
        per_problem_pass_at_k(np.array([5]), 4, [1])
    with pytest.raises(ConfigError, match=r"k \[8\]"):
        per_problem_pass_at_k(np.array([1]), 4, [8])
    with pytest.raises(ConfigError, match="level"):
        bootstrap_mean(np.ones((1, 3)), 1.2, 100, 0)
    with pytest.raises(ConfigError, match="no problems"):
        resample_indices(0, 10, 0)


def test_doctests():
    assert doctest.testmod(bootstrap).failed == 0
