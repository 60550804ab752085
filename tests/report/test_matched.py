"""Matched Pass@1 on a trajectory: the first crossing against a plain loop, and its bootstrap."""

from __future__ import annotations

import numpy as np
import pytest

from es_lightning.report.intervals import ProblemBootstrap
from es_lightning.report.matched import matched_difference, path_coverage


def _loop(xs: list[float], ys: list[float], x: float) -> float:
    """The largest coverage where the path crosses ``x``, else the nearest end's (a plain loop)."""
    found = []
    for t in range(len(xs) - 1):
        if min(xs[t], xs[t + 1]) <= x <= max(xs[t], xs[t + 1]):
            if xs[t + 1] == xs[t]:
                found.append(max(ys[t], ys[t + 1]))
            else:
                found.append(ys[t] + (x - xs[t]) * (ys[t + 1] - ys[t]) / (xs[t + 1] - xs[t]))
    if found:
        return max(found)
    end = (
        max(range(len(xs)), key=lambda t: xs[t]) if x > max(xs) else min(range(len(xs)), key=lambda t: xs[t])
    )
    return ys[end]


def test_path_coverage_by_hand():
    path_x, path_y = np.array([[0.3, 0.4, 0.5]]), np.array([[0.9, 0.8, 0.6]])
    y, reached = path_coverage(path_x, path_y, np.array([0.35]))
    assert y[0] == pytest.approx(0.85) and reached[0]
    assert path_coverage(path_x, path_y, np.array([0.5]))[0][0] == pytest.approx(0.6)  # the last vertex
    y, reached = path_coverage(path_x, path_y, np.array([0.6]))  # more accurate than GRPO ever was
    assert y[0] == pytest.approx(0.6) and not reached[0]
    assert path_coverage(path_x, path_y, np.array([0.29]))[0][0] == pytest.approx(0.9)  # below the base


def test_a_path_that_turns_back_is_read_at_its_best():
    path_x, path_y = np.array([[0.3, 0.5, 0.4, 0.6]]), np.array([[0.9, 0.6, 0.8, 0.5]])
    # x = 0.45 is crossed three times: at 0.675, 0.7 and 0.725; the largest counts
    assert path_coverage(path_x, path_y, np.array([0.45]))[0][0] == pytest.approx(0.725)


def test_path_coverage_equals_a_plain_loop_on_winding_paths():
    rng = np.random.default_rng(0)
    xs, ys = rng.random((300, 6)), rng.random((300, 6))
    xs[:, 2] = xs[:, 1]  # vertical segments too
    points = rng.random(300) * 1.2 - 0.1  # some beyond the path on either side
    got, _ = path_coverage(xs, ys, points)
    for b in range(300):
        assert got[b] == pytest.approx(_loop(list(xs[b]), list(ys[b]), points[b]))


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
    assert on.estimate <= 0 and on.high <= 0  # a vertex of the path: never above it
    still = matched_difference(boot, "no_change", path, 8)  # the base itself: step 0 of the path
    assert still.estimate <= 0 and still.high <= 0
