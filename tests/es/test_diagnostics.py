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
    antithetic_split_half_correlation,
    constant_reward_message,
    correlation_from_reliability,
    flip_rate,
    no_signal_message,
    no_signal_reason,
    pair_differences,
    pooled_reliability,
    spearman_brown,
    split_half_correlation,
    split_half_reliability,
)
from es_lightning.es.run_signal import measure_run_signal

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


def test_antithetic_difference_reliability_hand_worked():
    """Pairs (2j, 2j+1) whose members share noise C[j, p] (common random numbers) and differ by
    HAND[j, p]: the differences are HAND, so their reliability is HAND's 0.597871, whatever C does
    to the member rewards (here it drowns them: the members' own split-half correlation is −0.26)."""
    shared = np.array(
        [[3.0, 0.0, 5.0, 1.0], [0.0, 4.0, 1.0, 6.0], [2.0, 2.0, 0.0, 0.0], [5.0, 1.0, 4.0, 0.0]]
    )
    members = np.empty((8, 4))
    members[0::2], members[1::2] = HAND + shared, shared
    np.testing.assert_array_equal(pair_differences(members), HAND)
    r_ab = 0.25 / math.sqrt(0.6875 * 0.5)  # test_reliability_hand_worked
    assert antithetic_split_half_correlation(members) == pytest.approx(r_ab)
    assert spearman_brown(antithetic_split_half_correlation(members)) == pytest.approx(0.597871, abs=1e-6)
    assert split_half_correlation(members) < 0


def test_antithetic_difference_reliability_matches_plain_loops():
    rng = np.random.default_rng(4)
    for _ in range(20):
        pairs, prompts = int(rng.integers(3, 9)), int(rng.integers(2, 12))
        r = rng.integers(0, 3, size=(2 * pairs, prompts)) / 2.0
        d = [[r[2 * j][p] - r[2 * j + 1][p] for p in range(prompts)] for j in range(pairs)]
        d = np.array(d)
        if d[:, 0::2].mean(1).std() * d[:, 1::2].mean(1).std() == 0:
            assert math.isnan(antithetic_split_half_correlation(r))
            continue
        expected = reference_reliability(d)
        assert spearman_brown(antithetic_split_half_correlation(r)) == pytest.approx(
            float(np.clip(expected, -1, 1))
        )
    with pytest.raises(ValueError, match="pairs; got 3 members"):
        pair_differences(np.ones((3, 4)))
    assert math.isnan(antithetic_split_half_correlation(np.ones((2, 4))))  # one pair: no correlation


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
    negative = [-0.1, -0.2] * 4
    assert no_signal_reason(negative[:3], [False] * 3, window=4, threshold=2.0, directions=32) is None
    assert no_signal_reason([0.0] * 4, [True] * 4, window=4, threshold=2.0, directions=32) is not None
    # the run-level rule needs two looks: at 4 updates not yet, at 8 (bound 0 at 4 and at 8) yes
    assert no_signal_reason(negative[:4], [False] * 4, window=4, threshold=2.0, directions=32) is None
    assert no_signal_reason(negative, [False] * 8, window=4, threshold=2.0, directions=32) is not None
    # judged only at multiples of the window
    assert no_signal_reason([*negative, -0.1], [False] * 9, window=4, threshold=2.0, directions=32) is None


def test_no_signal_when_the_run_level_signal_cannot_reach_the_threshold():
    """Window 1, N = 2 directions, r_ab 0.01, −0.01, 0.0 (t quantiles exact for df 1 and 2).
    Look 1 (2 updates): mean 0, sd 0.014142, t(0.975, 1) = 12.706 → upper r_ab 0.12706 →
    ρ 0.22546 → bound √(0.22546·2·2) = 0.950. Look 2 (3 updates): sd 0.01, t(0.975, 2) = 4.3027 →
    r_ab ± 0.024842 → ρ̄ 0 [−0.050950, 0.048480] → bound √(0.048480·2·3) = 0.539."""
    correlations = [0.01, -0.01, 0.0]
    reason = no_signal_reason(correlations, [False] * 3, window=1, threshold=2.0, directions=2)
    assert reason is not None
    assert (
        "over its 3 applied updates the run-level signal sqrt(rho*N*T) is 0.00, at most 0.54 (< 2;" in reason
    )
    assert "pooled reliability rho 0.000 [-0.051, 0.048], N = 2" in reason
    # the bound must stay below the threshold at two looks in a row: 0.9 is above look 2 only
    assert no_signal_reason(correlations, [False] * 3, window=1, threshold=0.9, directions=2) is None
    assert no_signal_reason(correlations, [False] * 3, window=1, threshold=1.0, directions=2) is not None


def test_no_signal_stays_quiet_on_a_run_that_is_noisy_per_update_but_adds_up():
    """r_ab alternating 0.3, −0.2 (every window's own ρ̄ is 0.095, below the old per-window 0.1):
    over 20 updates of 32 members ρ̄ = 0.095 [−0.15, 0.29] and the signal √(0.095·32·20) = 7.8."""
    correlations = [0.3, -0.2] * 10
    assert pooled_reliability(correlations[:4]) < 0.1
    assert no_signal_reason(correlations, [False] * 20, window=4, threshold=2.0, directions=32) is None
    monitor = SignalMonitor(window=4, threshold=2.0, directions=32)
    assert all(monitor.observe(c, skipped=False) is None for c in correlations)


def test_no_signal_on_mostly_skipped_updates():
    reliable = [0.9] * 5
    reason = no_signal_reason(
        reliable, [True, True, True, False, False], window=5, threshold=2.0, directions=32
    )
    assert reason is not None and "3 of the last 5 updates were skipped" in reason
    # half is not most
    assert (
        no_signal_reason([0.9] * 4, [True, True, False, False], window=4, threshold=2.0, directions=32)
        is None
    )


def test_no_signal_leaves_skipped_and_undefined_updates_out():
    nan = float("nan")
    # the skipped updates' r_ab (−1: all member rewards tied, halves mirrored) is not a measurement
    assert no_signal_reason([-1.0, 0.4, 0.5, -1.0], [True, False, False, True], 2, 2.0, 32) is None
    # no finite correlation at all (one prompt per update): judged by the skips alone
    assert no_signal_reason([nan] * 4, [False] * 4, window=2, threshold=2.0, directions=32) is None
    assert no_signal_reason([nan] * 4, [True] * 4, window=2, threshold=2.0, directions=32) is not None


def test_no_signal_refuses_misaligned_series():
    with pytest.raises(ValueError, match="3 correlations but 2 skip flags"):
        no_signal_reason([0.0] * 3, [False] * 2, window=2, threshold=2.0, directions=32)


def test_monitor_warns_once_and_names_the_knobs():
    monitor = SignalMonitor(window=3, threshold=2.0, directions=32)
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
    monitor = SignalMonitor(window=4, threshold=2.0, directions=32)
    messages = [monitor.observe(math.nan, skipped=True, constant_reward=0.1) for _ in range(4)]
    assert messages[:3] == [None] * 3
    assert messages[3] == constant_reward_message(4, 4, [0.1] * 4)
    assert "every response got the same reward (0.1)" in messages[3]
    assert "The reward is the likely cause" in messages[3] and "train/rewards/<function>" in messages[3]
    assert "Likely causes: sigma too small" not in messages[3]
    assert "\n" not in messages[3]
    # ties without a constant reward (the responses differ, the member means tie): the σ message
    tied = SignalMonitor(window=4, threshold=2.0, directions=32)
    last = [tied.observe(math.nan, skipped=True, constant_reward=None) for _ in range(4)][-1]
    assert last is not None and "Likely causes: sigma too small" in last


def test_monitor_stays_quiet_with_signal():
    monitor = SignalMonitor(window=3, threshold=2.0, directions=32)
    assert all(monitor.observe(0.6, skipped=False) is None for _ in range(10))


@pytest.mark.slow
def test_monitor_rarely_warns_on_a_weak_real_signal():
    """r_ab drawn as one update of 32 members gives them (sd 1/√31 around 0.0124, the committed
    ES runs' pooled value: a run-level signal of 9.7 over 120 updates): the default monitor warns
    on at most 5% of 2,000 such runs (0.75% here; resampling the committed ES runs' own r_ab values,
    whose tails are heavier, gives 2.6%)."""
    rng = np.random.default_rng(5)
    runs = rng.normal(0.0124, 1 / math.sqrt(31), size=(2000, 120))
    warned = 0
    for series in runs:
        monitor = SignalMonitor(window=20, threshold=2.0, directions=32)
        warned += any(monitor.observe(c, skipped=False) is not None for c in series)
    assert warned / len(runs) <= 0.05, warned / len(runs)


def _correlations(series: list[float | None]) -> list[float]:
    return [math.nan if v is None else correlation_from_reliability(v) for v in series]


def _first_warning(correlations: list[float], skipped: list[bool], directions: int) -> int | None:
    """The update at which ES's default monitor warns, or None."""
    from es_lightning.strategies.es import ESStrategy

    defaults = inspect.signature(ESStrategy).parameters
    window, threshold = defaults["signal_window"].default, defaults["signal_threshold"].default
    assert (window, threshold) == (20, 2.0)
    monitor = SignalMonitor(window, threshold, directions)
    for t, (c, s) in enumerate(zip(correlations, skipped, strict=True), start=1):
        if monitor.observe(c, s) is not None:
            return t
    return None


def test_default_warning_on_the_committed_reliability_series():
    """The split-half values logged by real runs (ρ turned back into r_ab), N = 32: no warning on
    the arithmetic demo (ES +22 points of Pass@1; ρ̄ 0.37, signal 18.8), nor on countdown at the
    chosen σ = 3e-3 (+1.3 points over 120 updates, beating its permuted control: ρ̄ 0.025, signal
    9.7, where the old rule, pooled ρ̄ of the last 20 updates below 0.1, warned at update 20), nor
    at σ = 1e-3 and 1e-2, whose ρ̄ intervals do not exclude the signal a run needs."""
    data = json.loads((ASSETS / "es" / "reliability_series.json").read_text())
    for name in ("arithmetic_demo", "countdown_sigma3e-3", "countdown_sigma1e-3", "countdown_sigma1e-2"):
        correlations = _correlations(data[name]["reliability"])
        assert _first_warning(correlations, [False] * len(correlations), 32) is None, name
    demo = measure_run_signal(_correlations(data["arithmetic_demo"]["reliability"]), [False] * 30, 32)
    assert demo.interval.reliability > 0.3 and demo.signal[1] > 10  # resolved: its lower bound too
    countdown = _correlations(data["countdown_sigma3e-3"]["reliability"])
    found = measure_run_signal(countdown, [False] * 120, 32)
    assert found.interval.reliability < 0.05 and found.interval.low < 0 and found.signal[0] > 5
    assert pooled_reliability(countdown[:20]) < 0.1  # the old per-window rule's first look


def _v2_runs() -> Path | None:
    """The committed run logs of coverage setting v2 (either place they are kept)."""
    root = ASSETS.parents[1]
    for candidate in (root / "results" / "report_cpu_v2" / "runs", root / "docs" / "report" / "cpu" / "runs"):
        if (candidate / "es" / "seed0" / "metrics.jsonl").is_file():
            return candidate
    return None


def test_default_warning_on_the_committed_coverage_runs():
    """Every ES run of the CPU coverage report (N from its config): the warning stays quiet on ES's
    three seeds (+1.3 points each), its permuted control's and both sequential runs' ES stages;
    it fires on the two runs whose ρ̄ stays resolved below 0 (anti-correlated halves, which no
    signal produces): low-rank ES seed 1 at update 40 (ρ̄ −0.128 [−0.270, −0.002]) and the
    forgetting setting's ES seed 0 at update 100."""
    import yaml

    from es_lightning.report.readers import read_series

    runs = _v2_runs()
    if runs is None:
        pytest.skip("the coverage report's run logs are not in this checkout")
    warned = {}
    for folder in sorted({p.parent for p in runs.rglob("metrics.jsonl")}):
        run = folder.parent if folder.name.startswith("stage") else folder
        config = yaml.safe_load((run / "config.yaml").read_text())
        settings = [config.get("strategy")] + [stage["strategy"] for stage in config.get("stages") or []]
        es = next((s["init_args"] for s in settings if s and s["class_path"].endswith("ESStrategy")), None)
        series = read_series(folder)
        if es is None or "es/skipped" not in series or es["estimator"] != "one_point":
            continue
        reliability = dict(series.get("es/reward_reliability", []))
        steps = [step for step, _ in series["es/skipped"]]
        correlations = [correlation_from_reliability(reliability.get(step, math.nan)) for step in steps]
        skipped = [v > 0 for _, v in series["es/skipped"]]
        warned[str(folder.relative_to(runs))] = _first_warning(correlations, skipped, es["population_size"])
    assert len(warned) == 24  # one-point ES runs and ES stages (the antithetic ablations aside)
    assert {name: t for name, t in warned.items() if t is not None} == {
        "es_lowrank/seed1": 40,
        "forgetting/es/seed0": 100,
    }
    for name in ("es/seed0", "es/seed1", "es/seed2", "es_permuted/seed0", "es_then_grpo/seed0/stage1_es"):
        assert warned[name] is None
