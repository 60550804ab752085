"""Drift and ablation figures, each with what a method that did nothing would show."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from es_lightning.report.canvas import base_line, color, level_label, new_figure, save, spread

TITLES = {"final_reward": "final reward (×100)", "kappa_pair": "κ_pair"}
"""An ablation panel's series title per metric (others: ``<metric> (%)``)."""


def has_drift(report: dict[str, Any]) -> bool:
    methods = ((report.get("drift") or {}).get("methods") or {}).values()
    return any(d.get("sparsity") or d.get("top_k_by_kind") or d.get("sparsity_curve") for d in methods)


def has_ablation(report: dict[str, Any]) -> bool:
    rows = [r for a in (report.get("ablations") or {}).values() for r in a["rows"].values()]
    return any(v for r in rows for k, v in r.items() if isinstance(v, dict) and k != "kappa_pair_updates")


def _mean_sd(data: dict[str, Any] | None, scale: float = 1.0) -> tuple[float, float]:
    """``(mean, sd)`` of a JSON Stat, scaled; the sd is NaN (no error bar drawn) for one seed."""
    if not data:
        return float("nan"), float("nan")
    sd = spread(data["sd"], data.get("n"))
    return scale * data["mean"], float("nan") if sd is None else scale * sd


def grouped_bars(
    ax: Any, labels: list[str], series: dict[str, tuple[list[float], list[float]]]
) -> list[float]:
    """One group of bars per label, one bar per series (a NaN draws none); each group's centre."""
    width = 0.8 / max(len(series), 1)
    for i, (name, (heights, errors)) in enumerate(series.items()):
        xs = [j + i * width for j in range(len(labels))]
        ax.bar(xs, heights, width, yerr=errors, capsize=3, color=color(name, i), label=name)
    centres = [j + 0.4 - width / 2 for j in range(len(labels))]
    ax.set_xticks(centres, labels, rotation=20, fontsize=8)
    return centres


def _base_pass(report: dict[str, Any], k: str) -> dict[str, Any] | None:
    return (((report.get("intervals") or {}).get("pass_at_k") or {}).get("base") or {}).get(k)


def _sparsity(ax: Any, report: dict[str, Any], methods: dict[str, Any]) -> None:
    for i, (m, d) in enumerate(methods.items()):
        taus = sorted(d["sparsity"], key=float)
        ys = [100 * d["sparsity"][t]["mean"] for t in taus]
        errors = [_mean_sd(d["sparsity"][t], 100)[1] for t in taus]  # NaN: one seed, no bar
        ax.errorbar(
            [float(t) for t in taus], ys, yerr=errors, marker="o", color=color(m, i), label=m, capsize=3
        )
        null = (d.get("null") or {}).get("sparsity") or {}
        shown = [t for t in taus if null.get(t)]
        if shown:
            ys = [100 * null[t]["mean"] for t in shown]
            ax.plot([float(t) for t in shown], ys, "--", color=color(m, i), label=f"{m}: random-walk null")
    ax.set(xscale="log", xlabel="τ", ylabel="s_τ: share with |Δ| ≤ τ (%)", title="sparsity of the update")


def _kinds(ax: Any, report: dict[str, Any], kinds: dict[str, Any]) -> None:
    names = sorted({k for d in kinds.values() for k in d["top_k_by_kind"]})
    bars = {m: [_mean_sd(d["top_k_by_kind"].get(k)) for k in names] for m, d in kinds.items()}
    grouped_bars(ax, names, {m: ([h for h, _ in b], [e for _, e in b]) for m, b in bars.items()})
    nulls = [found for d in kinds.values() if (found := (d.get("null") or {}).get("top_k_by_kind"))]
    if nulls:
        null = nulls[0]
        xs = [j + 0.4 - 0.4 / max(len(kinds), 1) for j in range(len(names))]
        ys = [null[k]["mean"] if null.get(k) else float("nan") for k in names]
        ax.scatter(xs, ys, marker="D", color="black", zorder=3, label="null: parameter share × k")
    ax.set(ylabel="tensors among the top-k |Δ|", title="top-k layer attribution")


def _functional(ax: Any, report: dict[str, Any], curves: dict[str, Any]) -> None:
    for i, (m, d) in enumerate(curves.items()):
        points = sorted(d["sparsity_curve"].items(), key=lambda item: float(item[0]))
        points = [
            (v["s_tau"]["mean"], v["pass@1"]["mean"]) for _, v in points if v.get("s_tau") and v.get("pass@1")
        ]
        label = f"{m} (empirical null)" if "permuted" in m else m
        xs, ys = [100 * x for x, _ in points], [100 * y for _, y in points]
        ax.plot(xs, ys, marker="o", color=color(m, i), label=label)
    bases = [d.get("sparsity_curve_base") or {} for d in curves.values()]
    engine_base = [b["pass@1"]["mean"] for b in bases if b.get("pass@1")]
    base = _base_pass(report, "1")
    if engine_base:  # the base scored as the curve's points were (same engine and seed)
        label = "base, scored as the exports"
        ax.axhline(100 * engine_base[0], color="black", linewidth=1, linestyle=":", label=label)
    elif base:
        label = f"base Pass@1 ({level_label(report)} bootstrap band)"
        base_line(ax, 100 * base["estimate"], 100 * base["low"], 100 * base["high"], label)
    ax.set(xlabel="s_τ of the export (%): updates zeroed", ylabel="Pass@1 (%)", title="functional sparsity")


def plot_drift(report: dict[str, Any], path: Path) -> Path:
    """s_τ against τ (with the null), top-k by kind (with the null), Pass@1 against s_τ."""
    drift = report["drift"]["methods"]
    methods = {m: d for m, d in drift.items() if d.get("sparsity")}
    kinds = {m: d for m, d in drift.items() if d.get("top_k_by_kind")}
    curves = {m: d for m, d in drift.items() if d.get("sparsity_curve")}
    panels = [
        (draw, data) for draw, data in ((_sparsity, methods), (_kinds, kinds), (_functional, curves)) if data
    ]
    fig, axes = new_figure(len(panels))
    for ax, (draw, data) in zip(axes, panels):
        draw(ax, report, data)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    return save(fig, path)


def plot_ablations(report: dict[str, Any], path: Path) -> Path:
    """Per ablation: final reward and Pass@k per value with the base's band; κ_pair against 2."""
    ablations = report["ablations"]
    panels = []
    for name, data in ablations.items():
        rows = data["rows"]
        scores = sorted(
            {m for r in rows.values() for m, v in r.items() if v and m.startswith(("final", "pass@"))}
        )
        if scores:
            panels.append((name, rows, scores))
        if any(r.get("kappa_pair") for r in rows.values()):
            panels.append((name, rows, ["kappa_pair"]))
    fig, axes = new_figure(len(panels))
    for ax, (name, rows, metrics) in zip(axes, panels):
        labels = list(rows)
        series = {}
        for metric in metrics:
            scale = 1.0 if metric == "kappa_pair" else 100.0
            bars = [_mean_sd(rows[label].get(metric), scale) for label in labels]
            series[TITLES.get(metric, f"{metric} (%)")] = ([h for h, _ in bars], [e for _, e in bars])
        grouped_bars(ax, labels, series)
        kappa = metrics == ["kappa_pair"]
        if kappa:
            refs = [(j, rows[x]["reference"]) for j, x in enumerate(labels) if rows[x].get("reference")]
            if refs:
                ax.scatter(*zip(*refs), marker="D", color="black", zorder=3, label="paper")
            ax.axhline(2.0, color="gray", linestyle="--", linewidth=1, label="2: uncorrelated pairs")
        else:
            for metric in metrics:
                base = _base_pass(report, metric[5:]) if metric.startswith("pass@") else None
                if base:
                    label = f"base {metric} (sampling band)"
                    base_line(ax, 100 * base["estimate"], 100 * base["low"], 100 * base["high"], label)
        ax.set(title=name + (": κ_pair (< 2: pairing correlates the pair)" if kappa else ""))
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=7)
    return save(fig, path)
