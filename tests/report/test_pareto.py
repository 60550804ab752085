"""Pareto dominance on hand-made points: ties, duplicates, a single point, a chain."""

from __future__ import annotations

import doctest

import es_lightning.report.pareto as pareto
from es_lightning.report.pareto import dominated_by, dominates, frontier_line, non_dominated


def test_dominates_needs_one_strict_axis():
    assert dominates((0.6, 0.9), (0.5, 0.9))  # better on x, tied on y
    assert dominates((0.5, 0.95), (0.5, 0.9))  # tied on x, better on y
    assert dominates((0.6, 0.95), (0.5, 0.9))
    assert not dominates((0.5, 0.9), (0.5, 0.9))  # identical: neither dominates
    assert not dominates((0.6, 0.8), (0.5, 0.9))  # a trade-off
    assert not dominates((0.4, 0.9), (0.5, 0.9))


def test_trade_off_points_are_all_non_dominated():
    points = {"base": (0.45, 0.95), "es": (0.55, 0.97), "grpo": (0.70, 0.90), "seq": (0.60, 0.96)}
    # es dominates base; es, grpo and seq trade Pass@1 against Pass@K
    assert non_dominated(points) == ["es", "grpo", "seq"]
    assert dominated_by(points, "base") == ["es", "seq"]
    assert dominated_by(points, "grpo") == []


def test_single_point_is_non_dominated():
    assert non_dominated({"only": (0.1, 0.2)}) == ["only"]
    assert non_dominated({}) == []


def test_duplicates_stay_together():
    points = {"a": (0.5, 0.9), "b": (0.5, 0.9), "c": (0.4, 0.8)}
    assert non_dominated(points) == ["a", "b"]
    points["d"] = (0.5, 0.91)  # beats both duplicates on one axis, ties on the other
    assert non_dominated(points) == ["d"]


def test_ties_on_one_axis():
    points = {"a": (0.5, 0.9), "b": (0.6, 0.9), "c": (0.6, 0.8)}
    assert non_dominated(points) == ["b"]


def test_chain_keeps_only_the_top():
    points = {f"p{i}": (0.1 * i, 0.1 * i) for i in range(5)}
    assert non_dominated(points) == ["p4"]


def test_frontier_line_is_sorted_by_pass1_and_unique():
    points = {"grpo": (0.7, 0.9), "es": (0.55, 0.97), "base": (0.45, 0.95), "dup": (0.55, 0.97)}
    assert frontier_line(points) == [(0.55, 0.97), (0.7, 0.9)]


def test_doctests():
    assert doctest.testmod(pareto).failed == 0
