"""Matched Pass@1 on a trajectory: the path's coverage against a plain loop; the matched evidence's
per-seed values and two-level resamples against a direct computation."""

from __future__ import annotations

import numpy as np
import pytest

from es_lightning.evaluation.pass_at_k import pass_at_k
from es_lightning.report.intervals import ProblemBootstrap
from es_lightning.report.matched import beyond_note, matched_difference, matched_evidence, path_coverage


def coverage_by_loop(xs: list[float], ys: list[float], x: float) -> float:
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
    edge = max(xs) if x > max(xs) else min(xs)
    return max(ys[t] for t in range(len(xs)) if xs[t] == edge)  # of ends tied in Pass@1, the larger


def test_path_coverage_by_hand():
    path_x, path_y = np.array([[0.3, 0.4, 0.5]]), np.array([[0.9, 0.8, 0.6]])
    y, reached = path_coverage(path_x, path_y, np.array([0.35]))
    assert y[0] == pytest.approx(0.85) and reached[0]
    assert path_coverage(path_x, path_y, np.array([0.5]))[0][0] == pytest.approx(0.6)  # the last vertex
    y, reached = path_coverage(path_x, path_y, np.array([0.6]))  # more accurate than GRPO ever was
    assert y[0] == pytest.approx(0.6) and not reached[0]
    assert path_coverage(path_x, path_y, np.array([0.29]))[0][0] == pytest.approx(0.9)  # below the base


def test_beyond_the_path_tied_ends_give_the_larger_coverage():
    path_x, path_y = np.array([[0.3, 0.5, 0.5]]), np.array([[0.9, 0.6, 0.7]])
    assert path_coverage(path_x, path_y, np.array([0.6]))[0][0] == pytest.approx(0.7)


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
        assert got[b] == pytest.approx(coverage_by_loop(list(xs[b]), list(ys[b]), points[b]))


def _boot(counts: dict[str, list[int]]) -> ProblemBootstrap:
    block = {"m": 8, "problems": [f"p{i}" for i in range(len(counts["base"]))], "counts": {}}
    block["counts"] = {name: {"0": c} for name, c in counts.items()}
    return ProblemBootstrap(block, level=0.95, resamples=300, seed=0)


def test_a_point_on_the_path_is_not_above_it():
    rng = np.random.default_rng(1)
    base = rng.integers(0, 4, 40).tolist()
    mid = [min(8, c + 2) for c in base]
    end = [min(8, c + 4) for c in base]
    boot = _boot({"base": base, "g@5": mid, "g": end, "on_path": mid, "no_change": base, "beyond": [8] * 40})
    path = ["base", "g@5", "g"]
    on, beyond = matched_difference(boot, "on_path", path, 8)
    assert on.estimate <= 0 and (on.resampled <= 0).all() and beyond == 0  # a vertex: never above it
    still, _ = matched_difference(boot, "no_change", path, 8)  # the base itself: step 0 of the path
    assert still.estimate <= 0 and (still.resampled <= 0).all()
    far, beyond = matched_difference(boot, "beyond", path, 8)  # more accurate than GRPO ever was
    assert beyond == 300 and far.estimate == pytest.approx(1.0 - np.mean([pass_at_k(8, c, 8) for c in end]))
    assert beyond_note(beyond, 300).startswith("its Pass@1 lies outside the path in 300 of 300 resamples")
    assert beyond_note(0, 300) is None
    assert matched_difference(boot, "on_path", [*path, "absent"], 8) is None


def _values(rng: np.random.Generator, points: int, seeds: int, problems: int) -> np.ndarray:
    """``(points, S, P)`` per-problem values in [0, 1]: a path whose mean rises in update order,
    then the method (the last row) between its ends; continuous, so no two points tie."""
    rise = np.array([*(0.1 * np.arange(points - 1)), 0.11])[:, None, None]
    return np.clip(0.5 * rng.random((points, seeds, problems)) + rise, 0.0, 1.0)


def _bootstrap(problems: int, resamples: int, seeds: int = 3) -> ProblemBootstrap:
    counts = {"x": {str(s): [0] * problems for s in range(seeds)}}
    return ProblemBootstrap(
        {"m": 8, "problems": [str(i) for i in range(problems)], "counts": counts}, 0.95, resamples, 7
    )


def test_matched_evidence_per_seed_and_resamples_equal_a_plain_computation():
    rng = np.random.default_rng(4)
    xv, yv = (
        _values(rng, 4, 3, 6),
        _values(rng, 4, 3, 6),
    )  # a path of 3 points and the method; 3 seeds, 6 problems
    x_boot, y_boot = _bootstrap(6, 40), _bootstrap(6, 40)
    evidence, beyond = matched_evidence((x_boot, xv), (y_boot, yv))
    for s in range(3):  # each seed against its own path
        xs, ys = xv[:, s].mean(axis=1), yv[:, s].mean(axis=1)
        assert evidence.per_seed[s] == pytest.approx(
            ys[-1] - coverage_by_loop(list(xs[:-1]), list(ys[:-1]), xs[-1])
        )
    pooled_x, pooled_y = xv.mean(axis=(1, 2)), yv.mean(axis=(1, 2))
    assert evidence.estimate == pytest.approx(
        pooled_y[-1] - coverage_by_loop(list(pooled_x[:-1]), list(pooled_y[:-1]), pooled_x[-1])
    )
    draws, outside = x_boot.seed_draws(3), 0
    for b in range(40):  # the seeds of draw b, the problems of resample b, every point alike
        x = [np.mean([xv[t, s, i] for s in draws[b] for i in x_boot.indices[b]]) for t in range(4)]
        y = [np.mean([yv[t, s, i] for s in draws[b] for i in y_boot.indices[b]]) for t in range(4)]
        assert evidence.resampled[b] == pytest.approx(y[-1] - coverage_by_loop(x[:-1], y[:-1], x[-1]))
        outside += not min(x[:-1]) <= x[-1] <= max(x[:-1])
    assert beyond == outside


def test_the_path_and_the_point_may_come_from_different_tasks():
    rng = np.random.default_rng(5)
    xv = _values(rng, 4, 3, 7)  # in-domain Pass@1 on 7 problems
    yv = 1.0 - _values(rng, 4, 3, 5)  # held-out Pass@1 on 5 others, falling along the path
    x_boot, y_boot = _bootstrap(7, 30), _bootstrap(5, 30)
    evidence, _ = matched_evidence((x_boot, xv), (y_boot, yv))
    draws = x_boot.seed_draws(3)
    assert (draws == y_boot.seed_draws(3)).all()  # the seeds drawn are shared
    for b in (0, 17, 29):
        x = [np.mean([xv[t, s, i] for s in draws[b] for i in x_boot.indices[b]]) for t in range(4)]
        y = [np.mean([yv[t, s, i] for s in draws[b] for i in y_boot.indices[b]]) for t in range(4)]
        assert evidence.resampled[b] == pytest.approx(y[-1] - coverage_by_loop(x[:-1], y[:-1], x[-1]))
