"""The report's PNG figures, drawn from the collected numbers, each with the base's value and a
noise band; :func:`make_figures` skips a figure whose inputs are absent and says why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from es_lightning.evaluation.percent_axis import clamp_percent, percent_limits
from es_lightning.evaluation.plots import k_axis
from es_lightning.report.canvas import BAND, color, level_label, new_figure, save, spread
from es_lightning.report.figures_drift import has_ablation, has_drift, plot_ablations, plot_drift
from es_lightning.report.figures_training import plot_entropy, plot_heldout


def draw_pass_at_k(ax: Any, report: dict[str, Any], rows: dict[str, dict[str, Any]]) -> None:
    """Pass@K in percent against K: one line per method with its ± sd band and the base's band."""
    ks_all: set[int] = set()
    shown: list[float] = []
    seeds = 1
    for i, (name, row) in enumerate(rows.items()):
        ks = sorted(int(k) for k, v in row.items() if v)
        if not ks:
            continue
        ks_all.update(ks)
        mean = [clamp_percent(100 * row[str(k)]["mean"]) for k in ks]
        n = row[str(ks[0])]["n"]
        ax.plot(ks, mean, marker="o", markersize=3, color=color(name, i), label=f"{name} (n={n})")
        shown += mean
        sd = [spread(row[str(k)]["sd"], row[str(k)]["n"]) for k in ks]
        if all(s is not None for s in sd):
            seeds = max(seeds, n)
            lows = [clamp_percent(m - 100 * s) for m, s in zip(mean, sd)]
            highs = [clamp_percent(m + 100 * s) for m, s in zip(mean, sd)]
            ax.fill_between(ks, lows, highs, color=color(name, i), alpha=0.15)
            shown += lows + highs
    base = ((report.get("intervals") or {}).get("pass_at_k") or {}).get("base") or {}
    band = sorted((int(k), v) for k, v in base.items() if v)
    if band:
        lows = [clamp_percent(100 * v["low"]) for _, v in band]
        highs = [clamp_percent(100 * v["high"]) for _, v in band]
        label = f"base: sampling band ({level_label(report)} bootstrap bounds)"
        ax.fill_between([k for k, _ in band], lows, highs, label=label, **BAND)
        shown += lows + highs
    k_axis(ax, ks_all)
    ax.set_ylim(*percent_limits(shown))
    task = report["evaluations"]["task"]
    spread_note = "mean ± sd over seeds" if seeds > 1 else "one seed each (no spread)"
    ax.set(xlabel="K (samples per problem)", ylabel="pass@K (%)", title=f"{task}: Pass@K, {spread_note}")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize=7)


def draw_pareto(ax: Any, report: dict[str, Any], k: str) -> None:
    """Pass@1 against Pass@k: methods, trajectories, the base's temperature path and frontier."""
    data, rows = report["pareto"][k], report["evaluations"]["pass_at_k"]
    per_seed = report["evaluations"].get("per_seed") or {}
    xs_shown: list[float] = []
    ys_shown: list[float] = []
    for i, (name, (x, y)) in enumerate(data["points"].items()):
        seeds = [c for c in per_seed.get(name, {}).values() if "1" in c and k in c]
        if len(seeds) > 1:
            xs, ys = [100 * c["1"] for c in seeds], [100 * c[k] for c in seeds]
            ax.scatter(xs, ys, s=12, alpha=0.35, color=color(name, i))
            xs_shown, ys_shown = xs_shown + xs, ys_shown + ys
        sds = (spread(rows[name][key]["sd"], rows[name][key]["n"]) for key in ("1", k))
        xerr, yerr = (None if sd is None else 100 * sd for sd in sds)  # percent
        ax.errorbar(
            100 * x, 100 * y, xerr=xerr, yerr=yerr, fmt="o", color=color(name, i), capsize=3, label=name
        )
        xs_shown += [100 * x - (xerr or 0), 100 * x + (xerr or 0)]
        ys_shown += [100 * y - (yerr or 0), 100 * y + (yerr or 0)]
        if name in data["non_dominated"]:
            ax.scatter(
                [100 * x], [100 * y], s=220, facecolors="none", edgecolors=color(name, i), linewidths=1.5
            )
    line = data["frontier_line"]
    if len(line) > 1:
        xs, ys = [100 * x for x, _ in line], [100 * y for _, y in line]
        ax.plot(xs, ys, "--", color="gray", linewidth=1, label="end-point frontier (descriptive)")
    intervals = (report.get("intervals") or {}).get("pass_at_k") or {}
    base = intervals.get("base") or {}
    if base.get("1") and base.get(k):
        x0, x1, y0, y1 = (100 * base[a][b] for a in ("1", k) for b in ("low", "high"))
        ax.fill_between(
            [x0, x1], [y0, y0], [y1, y1], label=f"base: sampling box ({level_label(report)})", **BAND
        )
        xs_shown, ys_shown = xs_shown + [x0, x1], ys_shown + [y0, y1]
    trajectory_xs, trajectory_ys = _trajectory(ax, report, intervals, k)
    xs_shown, ys_shown = xs_shown + trajectory_xs, ys_shown + trajectory_ys
    sharpening = report.get("sharpening") or {}
    labels = [f"T={t:g}" for t in sharpening.get("temperatures", [])]
    line = dict(color="black", alpha=0.6, linewidth=1.2, label="base at T (sharpening)")
    sharp_xs, sharp_ys = _line(ax, labels, sharpening.get("points", []), intervals, k, ":", line)
    xs_shown, ys_shown = xs_shown + sharp_xs, ys_shown + sharp_ys
    ax.set_xlim(*percent_limits(xs_shown))
    ax.set_ylim(*percent_limits(ys_shown))
    ax.set(xlabel="Pass@1 (%)", ylabel=f"Pass@{k} (%)", title=f"Pass@1 vs Pass@{k}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)


def _trajectory(
    ax: Any, report: dict[str, Any], intervals: dict[str, Any], k: str
) -> tuple[list[float], list[float]]:
    """Each trajectory's path through (Pass@1, Pass@k), its updates marked; returns the points drawn."""
    block = report.get("trajectory") or {}
    paths = block.get("paths") or ({block["method"]: block} if block.get("method") else {})
    xs_all: list[float] = []
    ys_all: list[float] = []
    order = list((report.get("pareto") or {}).get(k, {}).get("points") or [])  # the end points' colours
    for method, path in paths.items():
        steps = [str(s) for s in path.get("steps", [])]
        shade = color(method, order.index(method) if method in order else 0)
        line = dict(color=shade, alpha=0.6, linewidth=1.5, label=f"{method} trajectory")
        xs, ys = _line(ax, steps, path.get("points", []), intervals, k, "-", line)
        xs_all, ys_all = xs_all + xs, ys_all + ys
    return xs_all, ys_all


def _line(
    ax: Any,
    labels: list[str],
    names: list[str],
    intervals: dict[str, Any],
    k: str,
    style: str,
    line: dict[str, Any],
) -> tuple[list[float], list[float]]:
    """The points ``names`` joined in order and labelled; returns the points drawn."""
    points = [(label, intervals.get(name) or {}) for label, name in zip(labels, names)]
    points = [(label, v) for label, v in points if v.get("1") and v.get(k)]
    if len(points) < 2:
        return [], []
    xs = [100 * v["1"]["estimate"] for _, v in points]
    ys = [100 * v[k]["estimate"] for _, v in points]
    ax.plot(xs, ys, style, **line)
    for (label, _), x, y in zip(points, xs, ys):
        ax.annotate(label, (x, y), fontsize=6, xytext=(2, 2), textcoords="offset points")
    return xs, ys


def _one_panel(report: dict[str, Any], path: Path, draw: Any, *args: Any) -> Path:
    """A one-panel figure of ``draw(ax, report, *args)`` saved to ``path``."""
    fig, (ax,) = new_figure()
    draw(ax, report, *args)
    return save(fig, path)


def make_figures(report: dict[str, Any], output_dir: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Draw every figure whose inputs exist; ``({name: file}, {name: why it was skipped})``."""
    made: dict[str, str] = {}
    skipped: dict[str, str] = {}
    rows = {m: r for m, r in (report["evaluations"].get("pass_at_k") or {}).items() if any(r.values())}

    def attempt(name: str, ready: bool, why: str, plot: Any, *args: Any) -> None:
        """``plot(report, path, *args)`` unless the figure's inputs are absent (``ready``: present)."""
        if not ready:
            skipped[name] = why
            return
        try:
            made[name] = plot(report, output_dir / name, *args).name
        except Exception as err:  # a figure must not cost the report
            skipped[name] = f"drawing failed: {type(err).__name__}: {err}"

    attempt("pass_at_k.png", bool(rows), "no finished evaluation", _one_panel, draw_pass_at_k, rows)
    for k in report["config"]["pareto_ks"]:
        ready = bool((report.get("pareto") or {}).get(str(k)))
        why = f"no evaluation has pass@1 and pass@{k}"
        attempt(f"pareto_pass1_pass{k}.png", ready, why, _one_panel, draw_pareto, str(k))
    curves = report.get("curves") or {}
    for name, ready, why, plot in (
        ("entropy.png", bool(curves.get("entropy")), "no run logged entropy/<task>", plot_entropy),
        ("heldout.png", bool(curves.get("heldout")), "no run logged heldout/<task>/pass@<k>", plot_heldout),
        ("drift.png", has_drift(report), "no es-lightning analyze output", plot_drift),
        ("ablations.png", has_ablation(report), "no finished ablation run", plot_ablations),
    ):
        attempt(name, ready, why, plot)
    return made, skipped
