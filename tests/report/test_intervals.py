"""Intervals over seeds (t), over updates (standard error) and over problems (bootstrap)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from es_lightning.evaluation.pass_at_k import pass_at_k
from es_lightning.report.intervals import ProblemBootstrap, seed_interval, updates_interval
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
