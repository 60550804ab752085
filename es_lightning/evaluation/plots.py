"""Pass@K plots. The profile: pass@K in percent against K on a log2 axis, one line per model, showing
whether training sharpened Pass@1 at the cost of coverage at large K. The change from the start: each
model's Pass@K minus the starting model's, in points, against the noise of a difference,
± 1.96·√2·√(p(1 − p)/P), on an axis of at least ± 5 points."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from es_lightning.evaluation.percent_axis import MIN_SPAN, Z_95, binomial_se, clamp_percent, percent_limits


def pow2_ticks(ks: list[int]) -> list[int]:
    """Powers of two between the smallest and largest K, plus both ends."""
    lo, hi = min(ks), max(ks)
    return sorted({lo, hi, *(2**i for i in range(hi.bit_length()) if lo <= 2**i <= hi)})


def plot_pass_at_k(
    curves: Mapping[str, Mapping[int, float]],
    path: str | Path,
    title: str | None = None,
    problems: Mapping[str, float] | None = None,
) -> Path:
    """Draw the Pass@K profiles ``{label: {k: pass@k}}`` to ``path``; ``problems`` gives a noise band."""
    return save_png(path, title, lambda ax: draw_pass_at_k(ax, curves, problems))


def k_axis(ax: Axes, ks: set[int]) -> None:
    """``ax``'s x axis for K: log base 2, ticks at the powers of 2 among ``ks`` (one K: centred)."""
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(pow2_ticks(sorted(ks))))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    if len(ks) == 1:
        k = next(iter(ks))
        ax.set_xlim(k / 1.5, k * 1.5)


def save_png(path: str | Path, title: str | None, draw: Callable[[Axes], None]) -> Path:
    """One figure drawn by ``draw``, titled, saved as a PNG at ``path``; returns the path."""
    fig = Figure(figsize=(6.4, 4.4), dpi=120)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    draw(ax)
    if title:
        ax.set_title(title)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    return path


def draw_pass_at_k(
    ax: Axes, curves: Mapping[str, Mapping[int, float]], problems: Mapping[str, float] | None = None
) -> None:
    """The curves of :func:`plot_pass_at_k` on ``ax``: lines, the noise band, the axes."""
    all_ks = _checked_ks(curves)
    shown: list[float] = []
    for label, curve in curves.items():
        ks = sorted(curve)
        shown += _profile(ax, ks, [100.0 * float(curve[k]) for k in ks], label)
    shown += _noise_band(ax, curves, problems or {})
    k_axis(ax, all_ks)
    ax.set_ylim(*percent_limits(shown))
    ax.set_xlabel("K (samples per problem)")
    ax.set_ylabel("pass@K (%)")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="lower right")


def _profile(ax: Axes, ks: list[int], values: list[float], label: str) -> list[float]:
    """One model's line (points marked up to 16 Ks); returns ``values``."""
    ax.plot(ks, values, marker="o" if len(ks) <= 16 else None, markersize=4, linewidth=1.8, label=label)
    return values


def _noise_band(
    ax: Axes, curves: Mapping[str, Mapping[int, float]], problems: Mapping[str, float]
) -> list[float]:
    """The 95 % binomial band of the first curve with a problem count; returns its edges (percent)."""
    label = next((name for name in curves if problems.get(name)), None)
    if label is None:
        return []
    ks, count = sorted(curves[label]), float(problems[label])
    half = [100.0 * Z_95 * binomial_se(float(curves[label][k]), count) for k in ks]
    lows = [clamp_percent(100.0 * float(curves[label][k]) - h) for k, h in zip(ks, half, strict=True)]
    highs = [clamp_percent(100.0 * float(curves[label][k]) + h) for k, h in zip(ks, half, strict=True)]
    ax.fill_between(
        ks, lows, highs, color="0.6", alpha=0.25, label=f"{label}: 95% noise band (binomial, P={count:g})"
    )
    return lows + highs


def _checked_ks(curves: Mapping[str, Mapping[int, float]]) -> set[int]:
    """Every K of the curves; ValueError naming a malformed curve."""
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
            shown += _profile(ax, ks, [100.0 * (float(curve[k]) - float(base[k])) for k in ks], label)
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
