"""Intervals over seeds (t), over updates (standard error) and over problems (bootstrap); the
evidence a verdict reads (per-seed values and the two-level bootstrap, seeds × problems); the
starting model evaluated once and paired with every seed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from es_lightning.evaluation.pass_at_k import pass_at_k
from es_lightning.report.intervals import ProblemBootstrap, fixed_model, seed_interval, updates_interval
from es_lightning.report.stats import stat


def test_seed_interval_by_hand():
    data = stat({0: 1.0, 1: 2.0, 2: 4.0}).to_json()  # mean 7/3, sd 1.5275
    interval = seed_interval(data, 0.95)
    half = 2.920 * data["sd"] / math.sqrt(3)  # t_{0.95, 2} = 2.920
    assert interval.estimate == pytest.approx(7 / 3)
    assert interval.low == pytest.approx(7 / 3 - half, abs=1e-3) and interval.high == pytest.approx(
        7 / 3 + half, abs=1e-3
    )
    assert seed_interval(stat([0.5]).to_json(), 0.95) is None  # one seed: no spread


def test_updates_interval_pools_every_update():
    series = {0: [2.0, 2.2, 1.8], 1: [2.4, 2.1]}
    values = np.array([2.0, 2.2, 1.8, 2.4, 2.1])
    interval = updates_interval(series, 0.95)
    half = 2.132 * values.std(ddof=1) / math.sqrt(5)  # t_{0.95, 4} = 2.132
    assert interval.n == 5 and interval.estimate == pytest.approx(values.mean())
    assert interval.high - interval.estimate == pytest.approx(half, abs=1e-3)
    assert updates_interval({0: [2.0]}, 0.95) is None


def _outcomes() -> dict:
    rng = np.random.default_rng(5)
    counts = {m: {str(s): rng.integers(0, 9, size=12).tolist() for s in (0, 1, 2)} for m in ("base", "a")}
    counts["b"] = {"0": counts["a"]["0"], "2": counts["a"]["2"]}  # two seeds only
    return {"m": 8, "problems": [f"p{i}" for i in range(12)], "counts": counts}


def test_paired_difference_equals_a_plain_loop():
    outcomes = _outcomes()
    boot = ProblemBootstrap(outcomes, level=0.9, resamples=200, seed=4)
    got = boot.difference("a", "base", 4)
    seeds, diffs = [0, 1, 2], []
    for b in range(200):
        total = 0.0
        for s in seeds:
            for i in boot.indices[b]:
                a, base = outcomes["counts"]["a"][str(s)][i], outcomes["counts"]["base"][str(s)][i]
                total += pass_at_k(8, a, 4) - pass_at_k(8, base, 4)
        diffs.append(total / (len(seeds) * 12))
    assert got.low == pytest.approx(np.quantile(diffs, 0.1)) and got.high == pytest.approx(
        np.quantile(diffs, 0.9)
    )
    exact = np.mean([pass_at_k(8, outcomes["counts"]["a"][str(s)][i], 4) for s in seeds for i in range(12)])
    exact -= np.mean(
        [pass_at_k(8, outcomes["counts"]["base"][str(s)][i], 4) for s in seeds for i in range(12)]
    )
    assert got.estimate == pytest.approx(exact)


def test_pairing_uses_the_seeds_both_have():
    boot = ProblemBootstrap(_outcomes(), level=0.95, resamples=100, seed=0)
    assert boot.seeds("a", "b") == [0, 2]
    same = boot.difference("b", "a", 1)  # b is a on its two seeds: exactly 0 in every resample
    assert (same.estimate, same.low, same.high) == (0.0, 0.0, 0.0)
    assert boot.difference("a", "missing", 1) is None
    assert boot.pass_at_k("a", 9) is None  # k > M


def _per_problem(outcomes: dict, method: str, seed: int, k: int) -> list[float]:
    return [pass_at_k(outcomes["m"], c, k) for c in outcomes["counts"][method][str(seed)]]


def test_the_two_level_bootstrap_equals_a_plain_loop():
    outcomes = _outcomes()
    boot = ProblemBootstrap(outcomes, level=0.95, resamples=60, seed=3)
    values = np.array([[pass_at_k(8, c, 2) for c in outcomes["counts"]["a"][str(s)]] for s in (0, 1, 2)])
    evidence = boot.evidence(values)
    draws = boot.seed_draws(3)
    assert draws.shape == (60, 3) and (boot.seed_draws(3) == draws).all()  # shared by every statistic
    expected = []
    for b in range(60):  # seeds drawn with replacement, then the problems of resample b for each
        expected.append(np.mean([np.mean([values[s, i] for i in boot.indices[b]]) for s in draws[b]]))
    assert evidence.resampled == pytest.approx(expected)
    assert evidence.per_seed == pytest.approx([np.mean(values[s]) for s in range(3)])
    assert evidence.estimate == pytest.approx(values.mean())
    assert len(set(map(tuple, draws))) > 1 and draws.min() == 0 and draws.max() == 2  # seeds vary


def test_difference_evidence_per_seed_and_its_tests():
    outcomes = _outcomes()
    boot = ProblemBootstrap(outcomes, level=0.95, resamples=200, seed=1)
    d = boot.difference_evidence("a", "base", 4)
    expected = [
        np.mean(_per_problem(outcomes, "a", s, 4)) - np.mean(_per_problem(outcomes, "base", s, 4))
        for s in (0, 1, 2)
    ]
    assert d.per_seed == pytest.approx(expected) and d.n_seeds == 3
    assert d.estimate == pytest.approx(np.mean(expected))
    # the p-value of "above θ" is the larger of the seed t's and the bootstrap's
    boot_p = (1 + int((d.resampled <= 0.0).sum())) / 201
    t = np.mean(expected) / (np.std(expected, ddof=1) / math.sqrt(3))
    t_p = 0.5 * (1 - t / math.sqrt(2 + t * t))  # Student's t with 2 degrees of freedom, closed form
    assert d.p_greater(0.0) == pytest.approx(max(boot_p, t_p))
    assert boot.difference_evidence("b", "a", 1).per_seed == (0.0, 0.0)  # b is a on seeds 0 and 2
    assert boot.difference_evidence("a", "missing", 1) is None


def test_fixed_model_names():
    assert fixed_model("base") and fixed_model("base@T0.4")
    assert not fixed_model("grpo@5") and not fixed_model("baseline") and not fixed_model("es")


def _once() -> dict:
    """The starting model (and its cooler temperature) evaluated once, ES on three seeds."""
    rng = np.random.default_rng(2)
    counts = {
        "base": {"0": rng.integers(0, 9, 10).tolist()},
        "base@T0.4": {"0": rng.integers(0, 9, 10).tolist()},
        "es": {str(s): rng.integers(0, 9, 10).tolist() for s in (0, 1, 2)},
        "one": {"1": rng.integers(0, 9, 10).tolist()},
        "per_seed_base": {str(s): rng.integers(0, 9, 10).tolist() for s in (0, 1)},
    }
    return {"m": 8, "problems": [f"p{i}" for i in range(10)], "counts": counts}


def test_a_model_evaluated_once_pairs_with_every_seed():
    outcomes = _once()
    boot = ProblemBootstrap(outcomes, level=0.95, resamples=100, seed=0)
    assert boot.seeds("es", "base") == boot.seeds("es", "base@T0.4", "base") == [0, 1, 2]
    assert boot.seeds("base", "base@T0.4") == [0]  # nothing else to pair with
    rows = boot.values("base", 1, [0, 1, 2])
    assert rows.shape == (3, 10) and (rows == rows[0]).all()
    d = boot.difference_evidence("es", "base", 1)
    base = np.mean(_per_problem(outcomes, "base", 0, 1))
    assert d.per_seed == pytest.approx(
        [np.mean(_per_problem(outcomes, "es", s, 1)) - base for s in (0, 1, 2)]
    )
    cooler = boot.difference_evidence("es", "base@T0.4", 2)
    assert cooler.n_seeds == 3
    # a trained method on one seed is not broadcast: it pairs only where the other has that seed
    assert boot.seeds("es", "one") == [1] and boot.difference_evidence("es", "one", 1).n_seeds == 1
    # a base evaluated per seed pairs by seed, like any method
    outcomes["counts"]["base"] = outcomes["counts"].pop("per_seed_base")
    boot = ProblemBootstrap(outcomes, level=0.95, resamples=100, seed=0)
    assert boot.seeds("es", "base") == [0, 1]
