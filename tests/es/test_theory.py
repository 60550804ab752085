"""Alignment and transfer (es_lightning.es.diversity) against plain loops, a no-signal simulation and a
smooth model whose centre follows the reward-weighted mixture to first order."""

from __future__ import annotations

import math

import numpy as np
import pytest

from es_lightning.es.diversity import alignment_covariance, bernoulli_kl, mixture_weights, transfer_error
from es_lightning.es.normalize import normalize_rewards


def test_alignment_covariance_against_a_loop():
    rng = np.random.default_rng(0)
    p, z = rng.integers(0, 5, size=(6, 5)) / 4, rng.normal(size=6)
    total = 0.0
    for x in range(5):
        mean_p, mean_z = sum(p[:, x]) / 6, sum(z) / 6
        total += sum((z[i] - mean_z) * (p[i, x] - mean_p) for i in range(6)) / 6
    assert alignment_covariance(z, p) == pytest.approx(total / 5, abs=1e-14)


def test_no_signal_alignment_averages_zero_on_probe_samples():
    """Identical members (no signal): over 1,000 simulated updates the covariance of z with probe
    success averages 0 within 2 standard errors; with the success of the very responses that
    produced the rewards (the in-sample version) it is positive by construction."""
    rng = np.random.default_rng(0)
    n, batch, prompts, samples = 8, 16, 16, 4
    probe_cov, in_sample_cov = [], []
    while len(probe_cov) < 1000:
        q_train, q_probe = rng.uniform(0, 1, batch), rng.uniform(0, 1, prompts)  # every member's rates
        train = (rng.random((n, batch)) < q_train).astype(float)  # one response per reward prompt
        rewards = train.mean(axis=1)
        if np.all(rewards == rewards[0]):
            continue  # a skipped update has no z
        z = normalize_rewards(rewards)
        probe = rng.binomial(samples, q_probe, size=(n, prompts)) / samples  # fresh samples
        probe_cov.append(alignment_covariance(z, probe))
        in_sample_cov.append(alignment_covariance(z, train))
    mean, se = np.mean(probe_cov), np.std(probe_cov, ddof=1) / math.sqrt(len(probe_cov))
    assert abs(mean) < 2 * se
    in_mean, in_se = np.mean(in_sample_cov), np.std(in_sample_cov, ddof=1) / math.sqrt(1000)
    assert in_mean > 20 * in_se  # cov(z, R)/B = std(R)/B > 0 whatever the members are


def test_mixture_weights_and_kl_by_hand():
    w = mixture_weights(np.array([1.0, -1.0, 0.5, 0.0]), learning_rate=2e-3, sigma=1e-3)
    assert w.tolist() == pytest.approx([0.5, -0.5, 0.25, 0.0])  # α z_i/(σN) = 2·z_i/4
    # KL(1/2 ‖ 1/4) = ½·log₂2 + ½·log₂(2/3) bits
    assert bernoulli_kl(np.array([0.5]), np.array([0.25]))[0] == pytest.approx(0.5 + 0.5 * math.log2(2 / 3))
    assert bernoulli_kl(np.array([0.0, 1.0]), np.array([0.0, 1.0])).tolist() == [0.0, 0.0]
    assert bernoulli_kl(np.array([1.0]), np.array([0.0]), clip=0.1)[0] == pytest.approx(
        0.9 * math.log2(9) + 0.1 * math.log2(1 / 9)
    )


def test_kl_of_rates_equal_but_for_rounding_is_zero_and_its_margin_finite():
    """0.3 and 0.1 + 0.2 differ in the last bit: the KL terms sum to about -1e-16 in floating point,
    whose square root in the margin was NaN (numpy's "invalid value encountered in sqrt")."""
    a, b = np.array([0.3]), np.array([0.1 + 0.2])
    assert a[0] * math.log2(a[0] / b[0]) + (1 - a[0]) * math.log2((1 - a[0]) / (1 - b[0])) < 0
    assert bernoulli_kl(a, b).tolist() == [0.0]
    with np.errstate(all="raise"):  # any numpy warning fails the test
        got = transfer_error(np.array([0.0]), np.array([[0.2]]), a, b, clip=0.0)
    assert got["diversity/transfer_kl"] == 0.0 and math.isfinite(got["diversity/transfer_margin"])


def test_transfer_is_zero_when_the_centre_is_the_mixture():
    rng = np.random.default_rng(2)
    members = rng.integers(0, 5, size=(8, 10)) / 4
    z = normalize_rewards(rng.normal(size=8))
    w = mixture_weights(z, 1e-3, 1e-2)
    before = rng.integers(1, 4, size=10) / 4  # inside (0, 1): the mixture needs no clipping
    mixture = (1 - w.sum()) * before + w @ members  # B_w by hand
    assert np.all((mixture >= 0) & (mixture <= 1))
    got = transfer_error(w, members, before, mixture, clip=0.1)
    assert got["diversity/transfer_kl"] == pytest.approx(0.0, abs=1e-15)
    gain = float((mixture - before).mean())
    assert got["diversity/mixture_gain"] == pytest.approx(gain, abs=1e-15)
    assert got["diversity/mixture_gain"] == pytest.approx(0.1 * alignment_covariance(z, members), abs=1e-15)
    assert got["diversity/transfer_margin"] == pytest.approx(gain, abs=1e-15)
    assert got["diversity/centre_gain"] == pytest.approx(gain, abs=1e-15)
    # a centre that did not move keeps none of the mixture's gain: KL > 0, margin below the gain
    stuck = transfer_error(w, members, before, before, clip=0.1)
    assert stuck["diversity/transfer_kl"] > 0 and stuck["diversity/transfer_margin"] < gain


def test_the_centre_follows_the_mixture_to_first_order():
    """A smooth model, p_θ(x) = sigmoid(a_x·θ), success rates exact: after θ⁺ = θ + (α/N)·Σ z_i ε_i
    the centre's success is the mixture's up to second order: its KL is far below that of the
    predictions "the centre did not move" (p_θ) and "the members' mean" (p̄)."""
    rng = np.random.default_rng(3)
    dim, n, prompts, sigma, lr = 40, 32, 24, 0.05, 0.05
    a_train, a_probe = rng.normal(size=(16, dim)), rng.normal(size=(prompts, dim))
    theta = rng.normal(size=dim) * 0.1

    def success(weights, a):
        return 1 / (1 + np.exp(-(a @ weights)))

    eps = rng.normal(size=(n, dim))
    rewards = np.array([success(theta + sigma * e, a_train).mean() for e in eps])
    z = normalize_rewards(rewards)
    after = theta + lr / n * (z @ eps)
    members = np.stack([success(theta + sigma * e, a_probe) for e in eps])
    w = mixture_weights(z, lr, sigma)
    before, reached = success(theta, a_probe), success(after, a_probe)
    got = transfer_error(w, members, before, reached, clip=0.0)
    stuck = transfer_error(np.zeros(n), members, before, reached, clip=0.0)  # B_w = p_θ
    mean = transfer_error(np.full(n, 1 / n), members, np.zeros(prompts), reached, clip=0.0)  # B_w = p̄
    assert got["diversity/transfer_kl"] < 0.05 * stuck["diversity/transfer_kl"]
    assert got["diversity/transfer_kl"] < 0.05 * mean["diversity/transfer_kl"]
    assert got["diversity/centre_gain"] == pytest.approx(got["diversity/mixture_gain"], rel=0.1)
    kl = bernoulli_kl((1 - w.sum()) * before + w @ members, reached)
    margin = np.mean((1 - w.sum()) * before + w @ members - before - np.sqrt(kl * math.log(2) / 2))
    assert got["diversity/transfer_margin"] == pytest.approx(margin, abs=1e-15)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: alignment_covariance(np.zeros(3), np.zeros((2, 4))), "one per member"),
        (lambda: mixture_weights(np.zeros(3), 0.0, 1.0), "must be > 0"),
        (
            lambda: transfer_error(np.ones(3) / 3, np.zeros((2, 4)), np.zeros(4), np.zeros(4), 0.1),
            r"shape \(2,\)",
        ),
        (
            lambda: transfer_error(np.ones(2) / 2, np.zeros((2, 4)), np.zeros(3), np.zeros(4), 0.1),
            r"shape \(4,\)",
        ),
    ],
)
def test_bad_input_is_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()
