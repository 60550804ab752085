"""Matched Pass@1 on a trajectory: the first crossing against a plain loop, and its bootstrap."""

from __future__ import annotations

import numpy as np
import pytest

from es_lightning.report.intervals import ProblemBootstrap
from es_lightning.report.matched import first_crossing, matched_difference


def _loop(xs: list[float], ys: list[float], x: float) -> float:
    for t in range(len(xs) - 1):
        lo, hi = min(xs[t], xs[t + 1]), max(xs[t], xs[t + 1])
        if lo <= x <= hi:
            if xs[t + 1] == xs[t]:
                return ys[t]
            return ys[t] + (x - xs[t]) * (ys[t + 1] - ys[t]) / (xs[t + 1] - xs[t])
    return float("nan")


def test_first_crossing_by_hand():
    path_x, path_y = np.array([[0.3, 0.4, 0.5]]), np.array([[0.9, 0.8, 0.6]])
    assert first_crossing(path_x, path_y, np.array([0.35]))[0] == pytest.approx(0.85)
    assert first_crossing(path_x, path_y, np.array([0.5]))[0] == pytest.approx(0.6)  # the last vertex
    assert np.isnan(first_crossing(path_x, path_y, np.array([0.29]))[0])  # below the start: never reached


def test_first_crossing_equals_a_plain_loop_on_winding_paths():
    rng = np.random.default_rng(0)
    xs, ys = rng.random((200, 6)), rng.random((200, 6))
    xs[:, 2] = xs[:, 1]  # vertical segments too
    points = rng.random(200)
    got = first_crossing(xs, ys, points)
    for b in range(200):
        expected = _loop(list(xs[b]), list(ys[b]), points[b])
        assert (np.isnan(got[b]) and np.isnan(expected)) or got[b] == pytest.approx(expected)


def _boot(counts: dict[str, list[int]]) -> ProblemBootstrap:
    block = {"m": 8, "problems": [f"p{i}" for i in range(len(counts["base"]))], "counts": {}}
    block["counts"] = {name: {"0": c} for name, c in counts.items()}
    return ProblemBootstrap(block, level=0.95, resamples=300, seed=0)


def test_a_point_on_the_path_is_not_above_it():
    rng = np.random.default_rng(1)
    base = rng.integers(0, 4, 40).tolist()
    mid = [min(8, c + 2) for c in base]
    end = [min(8, c + 4) for c in base]
    boot = _boot({"base": base, "g@5": mid, "g": end, "on_path": mid, "no_change": base})
    path = ["base", "g@5", "g"]
    on = matched_difference(boot, "on_path", path, 8)
    assert (on.estimate, on.low, on.high) == (0.0, 0.0, 0.0)
    still = matched_difference(boot, "no_change", path, 8)  # the base itself: step 0 of the path
    assert (still.estimate, still.low, still.high) == (0.0, 0.0, 0.0)
