"""Training-curve figures: token entropy (band: ± ``verdicts.entropy_margin``) and held-out Pass@k
(band: ± z·√(p(1 − p)/P)) over updates."""

from __future__ import annotations

import math
from pathlib import Path
from statistics import NormalDist
from typing import Any

from es_lightning.evaluation.percent_axis import percent_limits
from es_lightning.report.canvas import base_line, color, new_figure, save, spread


def _band(
    ax: Any, curve: dict[str, list], color_: str, label: str, linestyle: str = "-", scale: float = 1.0
) -> list[float]:
    """A mean curve over seeds with its ± sd band; returns the values drawn."""
    steps = curve["steps"]
    counts = curve.get("n") or [2] * len(steps)  # older report.json files lack the counts
    mean = [scale * m for m in curve["mean"]]
    sd = [scale * s if spread(s, n) is not None else 0.0 for s, n in zip(curve["sd"], counts)]
    ax.plot(
        steps, mean, linestyle=linestyle, color=color_, label=label, marker="." if len(steps) < 30 else None
    )
    lows, highs = [m - s for m, s in zip(mean, sd)], [m + s for m, s in zip(mean, sd)]
    if any(sd):
        ax.fill_between(steps, lows, highs, color=color_, alpha=0.15)
    return lows + highs


def start_value(curves: dict[str, dict[str, list]]) -> float | None:
    """The mean over methods of each curve's value at update 0 (the base), if logged."""
    starts = [c["mean"][0] for c in curves.values() if c["steps"] and c["steps"][0] == 0]
    return sum(starts) / len(starts) if starts else None


def plot_entropy(report: dict[str, Any], path: Path) -> Path:
    """Token entropy over training steps, one panel per task, one line per method."""
    entropy = report["curves"]["entropy"]
    margin = (report["config"].get("verdicts") or {}).get("entropy_margin", 0.005)
    fig, axes = new_figure(len(entropy))
    for ax, (task, methods) in zip(axes, entropy.items()):
        for i, (method, curve) in enumerate(methods.items()):
            _band(ax, curve, color(method, i), method)
        base = start_value(methods)
        if base is not None:
            base_line(ax, base, base - margin, base + margin, f"base ± {margin:g} nats (the 'keeps' margin)")
        ax.set(xlabel="update", ylabel="token entropy (nats)", title=f"entropy/{task}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    return save(fig, path)


def plot_heldout(report: dict[str, Any], path: Path) -> Path:
    """Held-out Pass@k over training steps: panel per task, colour per method, line style per k."""
    heldout = report["curves"]["heldout"]
    prompts = report["curves"].get("heldout_prompts") or {}
    level = (report["config"].get("verdicts") or {}).get("level", 0.95)
    z = NormalDist().inv_cdf(level)
    fig, axes = new_figure(len(heldout))
    styles = ["-", "--", ":", "-."]
    for ax, (task, by_k) in zip(axes, heldout.items()):
        shown: list[float] = []
        for j, (k, methods) in enumerate(sorted(by_k.items(), key=lambda x: int(x[0]))):
            for i, (method, curve) in enumerate(methods.items()):
                label = f"{method} pass@{k}"
                shown += _band(ax, curve, color(method, i), label, styles[j % len(styles)], scale=100.0)
            base = start_value(methods)
            if base is not None and prompts.get(task):
                half = 100 * z * math.sqrt(base * (1 - base) / prompts[task])
                label = f"base pass@{k} ± problem sampling (bound, P={prompts[task]:.0f})"
                base_line(ax, 100 * base, 100 * base - half, 100 * base + half, label)
                shown += [100 * base - half, 100 * base + half]
            elif base is not None:
                label = f"base pass@{k} (P not logged)"
                ax.axhline(100 * base, color="black", linewidth=1, linestyle=":", label=label)
        ax.set_ylim(*percent_limits(shown))  # inside [0, 100], at least 10 points: noise is not magnified
        ax.set(xlabel="update", ylabel="pass@k (%)", title=f"held-out {task}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    return save(fig, path)
