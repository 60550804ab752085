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
    flip_rate,
    no_signal_message,
    no_signal_reason,
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


def test_reliability_separates_signal_from_noise():
    """Bernoulli rewards: members with different true success rates q_i give ρ near its expected
    var(q) / (var(q) + mean q(1−q)/P) ≈ 0.89; members with one shared rate (no signal: what a
    method that did nothing would show) give ρ ≈ 0, a little below it (2r/(1 + r) is concave:
    E[ρ] ≈ −2·E[r²] ≈ −2/(N − 1)), well under the warning's default threshold 0.1."""
    rng = np.random.default_rng(1)
    n, p = 32, 64
    signal, noise = [], []
    for _ in range(200):
        q = rng.uniform(0.2, 0.8, size=(n, 1))
        signal.append(split_half_reliability((rng.random((n, p)) < q).astype(float)))
        noise.append(split_half_reliability((rng.random((n, p)) < 0.5).astype(float)))
    assert np.mean(signal) > 0.8
    assert -0.15 < np.mean(noise) < 0.0


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
    reason = no_signal_reason([0.05, -0.1, 0.2, 0.0], [False] * 4, window=4, threshold=0.1)
    assert reason is not None and "0.038" in reason and "< 0.1" in reason
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
    with pytest.raises(ValueError, match="3 reliabilities but 2 skip flags"):
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


def test_monitor_stays_quiet_with_signal():
    monitor = SignalMonitor(window=3, threshold=0.1)
    assert all(monitor.observe(0.6, skipped=False) is None for _ in range(10))


def test_default_window_on_measured_runs():
    """The default window (20 updates, threshold 0.1) on reliabilities logged by real runs: no
    warning on the arithmetic demo, where ES raised test Pass@1 by 22 points (its 10-update
    windows dip below 0.1, so a shorter window would cry wolf), and a warning on the countdown
    setting, where the training reward stayed flat (its 12 updates repeated to fill a window)."""
    from es_lightning.strategies.es import ESStrategy

    data = json.loads((ASSETS / "es" / "reliability_series.json").read_text())
    window = inspect.signature(ESStrategy).parameters["signal_window"].default
    threshold = inspect.signature(ESStrategy).parameters["signal_threshold"].default
    assert (window, threshold) == (20, 0.1)

    def reasons(series: list[float | None]) -> list[str | None]:
        values = [math.nan if v is None else v for v in series]
        return [
            no_signal_reason(values[:end], [False] * end, window, threshold)
            for end in range(window, len(values) + 1)
        ]

    demo = data["arithmetic_demo"]["reliability"]
    assert len(demo) == 30 and all(reason is None for reason in reasons(demo))
    assert any(  # the same series judged over 10 updates would have warned
        no_signal_reason([math.nan if v is None else v for v in demo[:end]], [False] * end, 10, threshold)
        for end in range(10, 31)
    )
    countdown = data["countdown_sigma1e-2"]["reliability"]
    assert all(reason is not None for reason in reasons((countdown * 2)[:window]))
