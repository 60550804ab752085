"""Pareto dominance on (Pass@1, Pass@K): which methods no other method beats on both axes.

p dominates q when p ≥ q on both axes and p > q on one; identical points do not dominate each
other. The paper's Figure 3 asks whether the sequential runs land beyond the frontier of base, ES
and GRPO.

    >>> non_dominated({"base": (0.5, 0.9), "es": (0.6, 0.9), "grpo": (0.7, 0.8)})
    ['es', 'grpo']
"""

from __future__ import annotations

from collections.abc import Mapping

Point = tuple[float, float]


def dominates(p: Point, q: Point) -> bool:
    """Whether ``p`` dominates ``q``: at least as good on both axes, better on one."""
    return p[0] >= q[0] and p[1] >= q[1] and (p[0] > q[0] or p[1] > q[1])


def non_dominated(points: Mapping[str, Point]) -> list[str]:
    """Names of the points no other point dominates, in the input order."""
    return [
        name
        for name, p in points.items()
        if not any(dominates(q, p) for other, q in points.items() if other != name)
    ]


def dominated_by(points: Mapping[str, Point], name: str) -> list[str]:
    """Names of the points that dominate ``points[name]``."""
    p = points[name]
    return [other for other, q in points.items() if other != name and dominates(q, p)]


def frontier_line(points: Mapping[str, Point]) -> list[Point]:
    """The non-dominated points sorted by the first axis (for drawing the frontier)."""
    keep = non_dominated(points)
    return sorted({points[name] for name in keep})
