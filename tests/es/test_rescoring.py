"""Fixed-rollout member rewards against a plain computation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from es_lightning.es.rescoring import importance_weights, rescored_rewards


def test_weights_against_plain_formula():
    member, centre = np.array([-3.0, -1.5, -7.0, -2.0]), np.array([-2.5, -2.0, -6.0, -2.0])
    raw = [math.exp(m - c) for m, c in zip(member, centre)]
    expected = [w * len(raw) / sum(raw) for w in raw]
    assert importance_weights(member, centre) == pytest.approx(expected, rel=1e-12)
    assert importance_weights(member, centre).mean() == pytest.approx(1.0)


def test_the_centre_itself_gets_the_plain_mean_reward():
    logps = np.array([-4.0, -1.0, -9.0])
    weights = importance_weights(logps, logps)
    reward, per_prompt = rescored_rewards(weights, np.array([1.0, 0.0, 1.0]), np.array([0, 0, 1]), 2)
    assert reward == pytest.approx(2 / 3) and per_prompt.tolist() == pytest.approx([0.5, 1.0])


def test_extreme_log_ratios_stay_finite():
    weights = importance_weights(np.array([0.0, -2000.0]), np.array([-2000.0, 0.0]))
    assert np.isfinite(weights).all() and weights.tolist() == pytest.approx([2.0, 0.0])


def test_per_prompt_means_against_loops():
    rng = np.random.default_rng(3)
    weights, values = rng.random(10), rng.random(10)
    prompt_of = np.array([0, 0, 1, 2, 2, 2, 3, 3, 3, 3])
    reward, per_prompt = rescored_rewards(weights, values, prompt_of, 5)
    assert reward == pytest.approx(sum(w * v for w, v in zip(weights, values)) / 10)
    for x in range(5):
        idx = [k for k in range(10) if prompt_of[k] == x]
        expected = sum(weights[k] * values[k] for k in idx) / len(idx) if idx else 0.0
        assert per_prompt[x] == pytest.approx(expected)


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="equal 1-D"):
        importance_weights(np.zeros(3), np.zeros(2))
