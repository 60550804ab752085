"""The Pass@K profile plot: pass@K in percent against K on a log2 axis, one line per model.

Comparing a base model with a post-trained one shows whether training sharpened Pass@1 at the cost
of coverage at large K (the lines cross) or widened what the model can solve at all::

    plot_pass_at_k({"base": base_curve, "after ES": es_curve}, "runs/x/pass_at_k.png")

Curves are ``{k: pass@k}`` with values in [0, 1], as :func:`~es_lightning.evaluation.pass_at_k.
pass_at_k_curve` returns them. The figure is drawn with matplotlib's Agg canvas directly, so the
global pyplot backend and state are never touched (safe on headless machines and in threads).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator


def _xticks(ks: list[int]) -> list[int]:
    """Powers of two between the smallest and largest K, plus both ends."""
    lo, hi = min(ks), max(ks)
    ticks = {lo, hi}
    p = 1
    while p <= hi:
        if p >= lo:
            ticks.add(p)
        p *= 2
    return sorted(ticks)


def plot_pass_at_k(
    curves: Mapping[str, Mapping[int, float]], path: str | Path, title: str | None = None
) -> Path:
    """Draw Pass@K profiles to a PNG.

    Args:
        curves: ``{label: {k: pass@k}}``, e.g. ``{"base": ..., "after ES": ...}``; values in [0, 1].
        path: the PNG to write (parent folders are created).
        title: optional figure title.

    Returns:
        The path written.

    Raises:
        ValueError: on no curves, an empty curve, a ``k < 1`` or a value outside [0, 1] (the
            label is named).
    """
    all_ks = _checked_ks(curves)
    fig = Figure(figsize=(6.4, 4.4), dpi=120)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    for label, curve in curves.items():
        ks = sorted(curve)
        ax.plot(
            ks,
            [100.0 * float(curve[k]) for k in ks],
            marker="o" if len(ks) <= 16 else None,
            markersize=4,
            linewidth=1.8,
            label=label,
        )
    ax.set_xscale("log", base=2)
    ticks = _xticks(sorted(all_ks))
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    if len(all_ks) == 1:
        k = next(iter(all_ks))
        ax.set_xlim(k / 1.5, k * 1.5)
    ax.set_xlabel("K (samples per problem)")
    ax.set_ylabel("pass@K (%)")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="lower right")
    if title:
        ax.set_title(title)
    fig.tight_layout()

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    return path


def _checked_ks(curves: Mapping[str, Mapping[int, float]]) -> set[int]:
    """Every K of the curves; raises ``ValueError`` naming the curve on no curves, an empty curve,
    a ``k < 1`` or a value outside [0, 1]."""
    if not curves:
        raise ValueError("plot_pass_at_k: no curves to plot")
    all_ks: set[int] = set()
    for label, curve in curves.items():
        if not curve:
            raise ValueError(f"plot_pass_at_k: curve {label!r} has no points")
        bad_k = [k for k in curve if int(k) < 1]
        if bad_k:
            raise ValueError(f"plot_pass_at_k: curve {label!r} has k={bad_k[0]}; k must be >= 1")
        bad_v = [v for v in curve.values() if not 0.0 <= float(v) <= 1.0]
        if bad_v:
            raise ValueError(
                f"plot_pass_at_k: curve {label!r} has value {bad_v[0]} outside [0, 1] "
                "(pass fractions, not percentages)"
            )
        all_ks.update(int(k) for k in curve)
    return all_ks
