"""Change from the start: each model's Pass@K minus the starting model's, in points, against the
noise of a difference, ± 1.96·√2·√(p(1 − p)/P), on an axis of at least ± 5 points."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from matplotlib.axes import Axes

from es_lightning.evaluation.percent_axis import MIN_SPAN, Z_95, binomial_se
from es_lightning.evaluation.plots import k_axis, save_png


def plot_change_from_start(
    curves: Mapping[str, Mapping[int, float]],
    start: str,
    path: str | Path,
    title: str | None = None,
    problems: Mapping[str, float] | None = None,
) -> Path:
    """Draw :func:`draw_change_from_start` to a PNG at ``path``; returns the path."""
    return save_png(path, title, lambda ax: draw_change_from_start(ax, curves, start, problems))


def draw_change_from_start(
    ax: Axes,
    curves: Mapping[str, Mapping[int, float]],
    start: str,
    problems: Mapping[str, float] | None = None,
) -> None:
    """Each curve minus ``start``'s, in points, with the zero line and the noise band."""
    if start not in curves:
        raise ValueError(f"draw_change_from_start: no curve {start!r} among {list(curves)}")
    base = curves[start]
    shown: list[float] = []
    all_ks: set[int] = set()
    for label, curve in curves.items():
        ks = sorted(k for k in curve if k in base and label != start)
        if ks:
            change = [100.0 * (float(curve[k]) - float(base[k])) for k in ks]
            ax.plot(
                ks, change, marker="o" if len(ks) <= 16 else None, markersize=4, linewidth=1.8, label=label
            )
            shown += change
            all_ks.update(ks)
    if not all_ks:
        raise ValueError(f"draw_change_from_start: no curve shares a K with {start!r}")
    ax.axhline(0.0, color="black", linewidth=1, linestyle=":")
    count = (problems or {}).get(start)
    if count:
        ks = sorted(all_ks)
        half = [100.0 * Z_95 * math.sqrt(2.0) * binomial_se(float(base[k]), float(count)) for k in ks]
        label = f"no change: 95% noise of a difference (binomial, P={count:g})"
        ax.fill_between(ks, [-h for h in half], half, color="0.6", alpha=0.25, label=label)
        shown += half
    reach = max([MIN_SPAN / 2, *(abs(v) for v in shown)]) * 1.05
    ax.set_ylim(-reach, reach)
    k_axis(ax, all_ks)
    ax.set(xlabel="K (samples per problem)", ylabel=f"pass@K − {start}'s (points)")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="best", fontsize=8)
