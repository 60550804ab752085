"""Signal diagnostics against hand-worked numbers and plain loops; the no-signal verdict on
synthetic series."""

from __future__ import annotations

import inspect
import json
import math
from pathlib import Path

import numpy as np
import pytest

from es_lightning.es.diagnostics import (
    SignalMonitor,
    constant_reward_message,
    correlation_from_reliability,
    flip_rate,
    no_signal_message,
    no_signal_reason,
    pooled_reliability,
    spearman_brown,
    split_half_correlation,
    split_half_reliability,
)

ASSETS = Path(__file__).resolve().parents[1] / "assets"

# member i (rows) × prompt p (columns)
HAND = np.array(
    [
        [1.0, 1.0, 0.0, 1.0],
        [0.0, 0.0, 0.0, 0.0],
        [1.0, 0.0, 1.0, 1.0],
        [0.0, 1.0, 0.0, 0.0],
    ]
)


def reference_reliability(r: np.ndarray) -> float:
    """Plain loops: member means on even and odd prompts, Pearson, Spearman–Brown."""
    n, p = r.shape
    a = [sum(r[i][q] for q in range(0, p, 2)) / len(range(0, p, 2)) for i in range(n)]
    b = [sum(r[i][q] for q in range(1, p, 2)) / len(range(1, p, 2)) for i in range(n)]
    ma, mb = sum(a) / n, sum(b) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    corr = cov / math.sqrt(sum((x - ma) ** 2 for x in a) * sum((y - mb) ** 2 for y in b))
    return 2 * corr / (1 + corr)


def reference_flip_rate(r: np.ndarray) -> float:
    """Plain loops: per prompt the most frequent value, then count the members that differ."""
    n, p = r.shape
    flips = 0
    for q in range(p):
        column = [r[i][q] for i in range(n)]
        mode = max(column, key=column.count)
        flips += sum(1 for v in column if v != mode)
    return flips / (n * p)


def test_reliability_hand_worked():
    # halves: a = [0.5, 0, 1, 0], b = [1, 0, 0.5, 0.5]; cov = 0.25, ss_a = 0.6875, ss_b = 0.5
    r_ab = 0.25 / math.sqrt(0.6875 * 0.5)
    assert r_ab == pytest.approx(0.426401, abs=1e-6)
    assert split_half_reliability(HAND) == pytest.approx(2 * r_ab / (1 + r_ab))
    assert split_half_reliability(HAND) == pytest.approx(0.597871, abs=1e-6)
    assert split_half_reliability(HAND) == pytest.approx(reference_reliability(HAND))


def test_reliability_matches_plain_loops_on_random_batches():
    rng = np.random.default_rng(0)
    for _ in range(20):
        r = rng.integers(0, 3, size=(int(rng.integers(3, 9)), int(rng.integers(2, 12)))) / 2.0
        if r[:, 0::2].mean(1).std() * r[:, 1::2].mean(1).std() == 0:
            assert math.isnan(split_half_reliability(r))
            continue
        expected = reference_reliability(r)
        assert split_half_reliability(r) == pytest.approx(float(np.clip(expected, -1.0, 1.0)))


def test_reliability_conventions():
    # a half that does not vary over the members cannot rank them: no measurement (NaN, not 0)
    assert math.isnan(split_half_reliability(np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 0.0]])))
    # all R_i tied, halves mirror each other (r_ab = −1): clipped to −1, not −∞
    assert split_half_reliability(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])) == -1.0
    # no split: one prompt, or one member
    assert math.isnan(split_half_reliability(np.ones((4, 1))))
    assert math.isnan(split_half_reliability(np.ones((1, 4))))
    # identical halves: perfectly reliable
    assert split_half_reliability(np.array([[1.0, 1.0], [0.0, 0.0], [1.0, 1.0]])) == pytest.approx(1.0)
    with pytest.raises(ValueError, match=r"shape \(N, P\)"):
        split_half_reliability(np.ones(4))


def _bernoulli_batches(rng, signal: bool, batches: int = 400, n: int = 32, p: int = 64):
    """Member × prompt 0/1 rewards: member i succeeds with its own rate q_i (signal) or with one
    shared rate (no signal: what a method that did nothing would show)."""
    for _ in range(batches):
        q = rng.uniform(0.2, 0.8, size=(n, 1)) if signal else np.full((n, 1), 0.3)
        yield (rng.random((n, p)) < q).astype(float)


def test_reliability_separates_signal_from_noise():
    """Members with different true success rates give ρ near its expected
    var(q) / (var(q) + mean q(1−q)/P) ≈ 0.89; members with one shared rate give ρ ≈ 0."""
    rng = np.random.default_rng(1)
    signal = [split_half_reliability(r) for r in _bernoulli_batches(rng, True, batches=200)]
    noise = [split_half_reliability(r) for r in _bernoulli_batches(rng, False, batches=200)]
    assert np.mean(signal) > 0.8
    assert -0.2 < np.mean(noise) < 0.05


def test_pooled_reliability_is_unbiased_where_the_mean_of_updates_is_not():
    """With no signal the pooled value (Spearman–Brown of the mean r_ab) sits at 0, while the mean
    of the per-update ρ falls below it (2r/(1 + r) is concave and clipped): the bias that made runs
    without signal read −0.04 to −0.13. With a weak signal the pooled value recovers the expected
    reliability, which the mean of the per-update ρ understates."""
    rng = np.random.default_rng(3)
    noise = list(_bernoulli_batches(rng, False))
    corr = [split_half_correlation(r) for r in noise]
    rho = [split_half_reliability(r) for r in noise]
    assert abs(pooled_reliability(corr)) < 0.03
    assert np.nanmean(rho) < pooled_reliability(corr) - 0.03
    # a weak signal: member rates spread by sd 0.03 around 0.3 on 64 prompts
    n, p, spread = 32, 64, 0.03
    expected = spread**2 / (spread**2 + 0.3 * 0.7 / p)  # the batch's reliability, ≈ 0.22
    weak = [(rng.random((n, p)) < rng.normal(0.3, spread, size=(n, 1))).astype(float) for _ in range(400)]
    pooled = pooled_reliability([split_half_correlation(r) for r in weak])
    assert pooled == pytest.approx(expected, abs=0.04)
    assert np.nanmean([split_half_reliability(r) for r in weak]) < pooled - 0.03


def test_pooled_reliability_by_hand():
    # mean r_ab = 0.2 -> 0.4 / 1.2; NaN updates are skipped; none finite -> NaN
    assert pooled_reliability([0.1, math.nan, 0.3]) == pytest.approx(0.4 / 1.2)
    assert math.isnan(pooled_reliability([math.nan, math.nan]))
    assert pooled_reliability([-0.5, -0.4]) == -1.0  # Spearman–Brown of r <= −1/3, clipped
    assert spearman_brown(0.5) == pytest.approx(2 / 3) and math.isnan(spearman_brown(math.nan))
    assert split_half_reliability(HAND) == pytest.approx(spearman_brown(split_half_correlation(HAND)))


def test_correlation_from_reliability_inverts_spearman_brown():
    for r_ab in (-0.3, -0.05, 0.0, 0.2, 0.9):
        assert correlation_from_reliability(spearman_brown(r_ab)) == pytest.approx(r_ab)
    assert correlation_from_reliability(-1.0) == pytest.approx(-1 / 3)  # clipped: a bound
    assert math.isnan(correlation_from_reliability(math.nan))


def test_flip_rate_hand_worked():
    # per prompt, members differing from the mode: 2, 2, 1, 2 of 4 → 7/16
    assert flip_rate(HAND) == pytest.approx(7 / 16)
    assert flip_rate(HAND) == pytest.approx(reference_flip_rate(HAND))
    assert flip_rate(np.zeros((5, 3))) == 0.0
    assert flip_rate(np.array([[0.0], [1.0], [0.5]])) == pytest.approx(2 / 3)


def test_flip_rate_matches_plain_loops_on_random_batches():
    rng = np.random.default_rng(2)
    for _ in range(20):
        r = rng.integers(0, 3, size=(int(rng.integers(2, 9)), int(rng.integers(1, 12)))) / 2.0
        assert flip_rate(r) == pytest.approx(reference_flip_rate(r))


def test_no_signal_waits_for_a_full_window():
    assert no_signal_reason([0.0] * 4, [True] * 4, window=5, threshold=0.1) is None
    assert no_signal_reason([0.0] * 5, [False] * 5, window=5, threshold=0.1) is not None


def test_no_signal_on_low_reliability():
    # correlations with mean 0.0375: pooled 0.075 / 1.0375 = 0.0723
    reason = no_signal_reason([0.05, -0.1, 0.2, 0.0], [False] * 4, window=4, threshold=0.1)
    assert reason is not None and "pooled es/reward_reliability" in reason and "0.072" in reason
    assert "< 0.1" in reason
    # mean 0.15: pooled 0.26
    assert no_signal_reason([0.3, 0.2, 0.1, 0.0], [False] * 4, window=4, threshold=0.1) is None


def test_no_signal_on_mostly_skipped_updates():
    reliable = [0.9] * 5
    reason = no_signal_reason(reliable, [True, True, True, False, False], window=5, threshold=0.1)
    assert reason is not None and "3 of the last 5 updates were skipped" in reason
    # half is not most
    assert no_signal_reason([0.9] * 4, [True, True, False, False], window=4, threshold=0.1) is None


def test_no_signal_judges_only_the_last_window():
    rho = [-1.0] * 6 + [0.5] * 3
    skipped = [True] * 6 + [False] * 3
    assert no_signal_reason(rho, skipped, window=3, threshold=0.1) is None
    assert no_signal_reason(rho, skipped, window=6, threshold=0.1) is not None


def test_no_signal_skips_nan_reliabilities():
    nan = float("nan")
    assert no_signal_reason([nan, 0.5, nan, 0.4], [False] * 4, window=4, threshold=0.1) is None
    assert no_signal_reason([nan, 0.0, nan, 0.0], [False] * 4, window=4, threshold=0.1) is not None
    # no finite reliability at all (one prompt per update): judged by the skips alone
    assert no_signal_reason([nan] * 4, [False] * 4, window=4, threshold=0.1) is None
    assert no_signal_reason([nan] * 4, [True] * 4, window=4, threshold=0.1) is not None


def test_no_signal_refuses_misaligned_series():
    with pytest.raises(ValueError, match="3 correlations but 2 skip flags"):
        no_signal_reason([0.0] * 3, [False] * 2, window=2, threshold=0.1)


def test_monitor_warns_once_and_names_the_knobs():
    monitor = SignalMonitor(window=3, threshold=0.1)
    messages = [monitor.observe(0.0, skipped=True) for _ in range(6)]
    assert messages[:2] == [None, None]
    assert messages[2] is not None and messages[3:] == [None, None, None]
    for knob in ("strategy.sigma", "trainer.batch_size", "temperature", "responses_per_prompt"):
        assert knob in messages[2]
    assert messages[2] == no_signal_message(
        "3 of the last 3 updates were skipped (all member rewards tied, so the weights did not move)"
    )
    assert "\n" not in messages[2]


def test_monitor_names_a_constant_reward_not_sigma():
    """Every response got the reward 0.1 (a function always 0, another always 1 at weight 0.1):
    the members tie whatever σ is, so the warning names the reward, not the σ knob."""
    monitor = SignalMonitor(window=4, threshold=0.1)
    messages = [monitor.observe(math.nan, skipped=True, constant_reward=0.1) for _ in range(4)]
    assert messages[:3] == [None] * 3
    assert messages[3] == constant_reward_message(4, 4, [0.1] * 4)
    assert "every response got the same reward (0.1)" in messages[3]
    assert "The reward is the likely cause" in messages[3] and "train/rewards/<function>" in messages[3]
    assert "Likely causes: sigma too small" not in messages[3]
    assert "\n" not in messages[3]
    # ties without a constant reward (the responses differ, the member means tie): the σ message
    tied = SignalMonitor(window=4, threshold=0.1)
    last = [tied.observe(math.nan, skipped=True, constant_reward=None) for _ in range(4)][-1]
    assert last is not None and "Likely causes: sigma too small" in last


def test_monitor_stays_quiet_with_signal():
    monitor = SignalMonitor(window=3, threshold=0.1)
    assert all(monitor.observe(0.6, skipped=False) is None for _ in range(10))


def test_default_window_on_measured_runs():
    """The default window (20 updates, threshold 0.1) on split-half values logged by real runs
    (each ρ turned back into r_ab): no warning on the arithmetic demo, where ES raised test Pass@1
    by 22 points (its 10-update windows dip below 0.1, so a shorter window would cry wolf), and a
    warning on countdown at σ = 1e-3 (the first coverage setting, where ES did not learn: every
    window) and at the chosen σ = 3e-3 of the 120-update setting (where ES's test Pass@1 rose 1.3
    points over 120 updates, yet its members carry as little signal: 86% of its windows)."""
    from es_lightning.strategies.es import ESStrategy

    data = json.loads((ASSETS / "es" / "reliability_series.json").read_text())
    window = inspect.signature(ESStrategy).parameters["signal_window"].default
    threshold = inspect.signature(ESStrategy).parameters["signal_threshold"].default
    assert (window, threshold) == (20, 0.1)

    def correlations(series: list[float | None]) -> list[float]:
        return [math.nan if v is None else correlation_from_reliability(v) for v in series]

    def reasons(series: list[float | None], length: int = window) -> list[str | None]:
        values = correlations(series)
        return [
            no_signal_reason(values[:end], [False] * end, length, threshold)
            for end in range(length, len(values) + 1)
        ]

    demo = data["arithmetic_demo"]["reliability"]
    assert len(demo) == 30 and all(reason is None for reason in reasons(demo))
    assert pooled_reliability(correlations(demo)) > 0.3
    assert any(reasons(demo, 10))  # the same series judged over 10 updates would have warned
    for name, updates in (("countdown_sigma1e-3", 40), ("countdown_sigma3e-3", 120)):
        series = data[name]["reliability"]
        assert len(series) == updates and pooled_reliability(correlations(series)) < 0.05
        judged = reasons(series)
        assert judged[0] is not None  # the warning, at the first full window (update 20)
        assert sum(reason is not None for reason in judged) > 0.8 * len(judged)
    assert all(reasons(data["countdown_sigma1e-3"]["reliability"]))
    countdown = data["countdown_sigma1e-2"]["reliability"]
    assert all(reason is not None for reason in reasons((countdown * 2)[:window]))
