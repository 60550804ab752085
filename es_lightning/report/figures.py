"""The report's PNG figures, drawn from the collected numbers (the same dict as ``report.json``).

``pass_at_k.png`` (mean ± sd band per method, K on a log2 axis), ``pareto_pass1_pass{k}.png``
(every method's mean with ± sd bars, non-dominated points ringed, the frontier of the
single-optimizer points dashed, as in the paper's Figure 3), ``entropy.png`` and ``heldout.png``
(curves over training steps), ``drift.png`` (s_τ against τ, top-k updates by layer kind, and the
thresholded exports' Pass@1 when evaluated) and ``ablations.png``. :func:`make_figures` skips a
figure whose inputs are absent and says why. Figures are drawn on matplotlib's Agg canvas without
touching pyplot's global state.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

COLORS = {
    "base": "black",
    "es": "tab:blue",
    "grpo": "tab:red",
    "es_then_grpo": "tab:purple",
    "grpo_then_es": "tab:orange",
}


def _pow2_ticks(ks: list[int]) -> list[int]:
    """Powers of two between the smallest and largest K, plus both ends."""
    return sorted(
        {min(ks), max(ks), *(2**i for i in range(max(ks).bit_length()) if min(ks) <= 2**i <= max(ks))}
    )


def _color(name: str, i: int) -> str:
    return COLORS.get(name, f"C{(i + 5) % 10}")


def _figure(n_panels: int = 1, width: float = 6.4, height: float = 4.4) -> tuple[Figure, list[Any]]:
    cols = min(n_panels, 3)
    rows = -(-n_panels // cols)
    fig = Figure(figsize=(width * cols * 0.8 if cols > 1 else width, height * rows), dpi=110)
    FigureCanvasAgg(fig)
    return fig, [fig.add_subplot(rows, cols, i + 1) for i in range(n_panels)]


def _save(fig: Figure, path: Path) -> Path:
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    return path


def _grouped_bars(ax: Any, labels: list[str], series: dict[str, tuple[list[float], list[float]]]) -> None:
    """One group of bars per label, one bar per series (``{name: (heights, error bars)}``)."""
    width = 0.8 / max(len(series), 1)
    for i, (name, (heights, errors)) in enumerate(series.items()):
        xs = [j + i * width for j in range(len(labels))]
        ax.bar(xs, heights, width, yerr=errors, capsize=3, color=_color(name, i), label=name)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(labels))], labels, rotation=20, fontsize=8)


def _mean_sd(data: dict[str, Any] | None, scale: float = 1.0) -> tuple[float, float]:
    return (scale * data["mean"], scale * data["sd"]) if data else (float("nan"), 0.0)


def plot_pass_at_k(rows: dict[str, dict[str, Any]], path: Path, task: str | None) -> Path:
    """Pass@K in percent against K, one line per method with its ± sd band."""
    fig, (ax,) = _figure()
    ks_all: set[int] = set()
    for i, (name, row) in enumerate(rows.items()):
        ks = sorted(int(k) for k, v in row.items() if v)
        if not ks:
            continue
        ks_all.update(ks)
        mean = [100 * row[str(k)]["mean"] for k in ks]
        sd = [100 * row[str(k)]["sd"] for k in ks]
        n = row[str(ks[0])]["n"]
        ax.plot(ks, mean, marker="o", markersize=3, color=_color(name, i), label=f"{name} (n={n})")
        ax.fill_between(
            ks,
            [m - s for m, s in zip(mean, sd)],
            [m + s for m, s in zip(mean, sd)],
            color=_color(name, i),
            alpha=0.15,
        )
    ax.set_xscale("log", base=2)
    ticks = _pow2_ticks(sorted(ks_all))
    ax.set_xticks(ticks, [str(k) for k in ticks])
    ax.minorticks_off()
    ax.set(
        xlabel="K (samples per problem)", ylabel="pass@K (%)", title=f"{task}: Pass@K, mean ± sd over seeds"
    )
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    return _save(fig, path)


def plot_pareto(
    data: dict[str, Any], rows: dict[str, dict[str, Any]], per_seed: dict[str, Any], k: str, path: Path
) -> Path:
    """Pass@1 against Pass@k: methods (± sd; each seed a faint dot), non-dominated ones ringed,
    the single-optimizer frontier dashed."""
    fig, (ax,) = _figure()
    for i, (name, (x, y)) in enumerate(data["points"].items()):
        seeds = [c for c in per_seed.get(name, {}).values() if "1" in c and k in c]
        if len(seeds) > 1:
            ax.scatter(
                [100 * c["1"] for c in seeds],
                [100 * c[k] for c in seeds],
                s=12,
                alpha=0.35,
                color=_color(name, i),
            )
        xerr, yerr = 100 * rows[name]["1"]["sd"], 100 * rows[name][k]["sd"]
        ax.errorbar(
            100 * x, 100 * y, xerr=xerr, yerr=yerr, fmt="o", color=_color(name, i), capsize=3, label=name
        )
        if name in data["non_dominated"]:
            ax.scatter(
                [100 * x], [100 * y], s=220, facecolors="none", edgecolors=_color(name, i), linewidths=1.5
            )
    line = data["frontier_line"]
    if len(line) > 1:
        ax.plot(
            [100 * x for x, _ in line],
            [100 * y for _, y in line],
            "--",
            color="gray",
            label="frontier (base/ES/GRPO)",
        )
    ax.set(xlabel="Pass@1 (%)", ylabel=f"Pass@{k} (%)", title=f"Pass@1 vs Pass@{k} (ringed: non-dominated)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)


def _band(ax: Any, curve: dict[str, list], color: str, label: str, linestyle: str = "-") -> None:
    steps, mean, sd = curve["steps"], curve["mean"], curve["sd"]
    ax.plot(
        steps, mean, linestyle=linestyle, color=color, label=label, marker="." if len(steps) < 30 else None
    )
    ax.fill_between(
        steps, [m - s for m, s in zip(mean, sd)], [m + s for m, s in zip(mean, sd)], color=color, alpha=0.15
    )


def plot_entropy(entropy: dict[str, dict[str, Any]], path: Path) -> Path:
    """Token entropy over training steps, one panel per task, one line per method."""
    fig, axes = _figure(len(entropy))
    for ax, (task, methods) in zip(axes, entropy.items()):
        for i, (method, curve) in enumerate(methods.items()):
            _band(ax, curve, _color(method, i), method)
        ax.set(xlabel="update", ylabel="token entropy (nats)", title=f"entropy/{task}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    return _save(fig, path)


def plot_heldout(heldout: dict[str, dict[str, dict[str, Any]]], path: Path) -> Path:
    """Held-out Pass@k over training steps: panel per task, colour per method, line style per k."""
    fig, axes = _figure(len(heldout))
    styles = ["-", "--", ":", "-."]
    for ax, (task, by_k) in zip(axes, heldout.items()):
        for j, (k, methods) in enumerate(sorted(by_k.items(), key=lambda x: int(x[0]))):
            for i, (method, curve) in enumerate(methods.items()):
                scaled = {
                    **curve,
                    "mean": [100 * m for m in curve["mean"]],
                    "sd": [100 * s for s in curve["sd"]],
                }
                _band(ax, scaled, _color(method, i), f"{method} pass@{k}", styles[j % len(styles)])
        ax.set(xlabel="update", ylabel="pass@k (%)", title=f"held-out {task}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    return _save(fig, path)


def plot_drift(drift: dict[str, Any], path: Path) -> Path:
    """s_τ against τ per method; top-k updates by layer kind; the thresholded Pass@1 against τ."""
    methods = {m: d for m, d in drift["methods"].items() if d.get("sparsity")}
    kinds = {m: d for m, d in drift["methods"].items() if d.get("top_k_by_kind")}
    curves = {m: d for m, d in drift["methods"].items() if d.get("sparsity_curve")}
    panels = [p for p, has in (("sparsity", methods), ("kinds", kinds), ("curve", curves)) if has]
    fig, axes = _figure(len(panels))
    for ax, panel in zip(axes, panels):
        if panel == "sparsity":
            for i, (m, d) in enumerate(methods.items()):
                taus = sorted(d["sparsity"], key=float)
                ax.errorbar(
                    [float(t) for t in taus],
                    [100 * d["sparsity"][t]["mean"] for t in taus],
                    yerr=[100 * d["sparsity"][t]["sd"] for t in taus],
                    marker="o",
                    color=_color(m, i),
                    label=m,
                    capsize=3,
                )
            ax.set(
                xscale="log", xlabel="τ", ylabel="s_τ: share with |Δ| ≤ τ (%)", title="sparsity of the update"
            )
        elif panel == "kinds":
            names = sorted({k for d in kinds.values() for k in d["top_k_by_kind"]})
            bars = {m: [_mean_sd(d["top_k_by_kind"].get(k)) for k in names] for m, d in kinds.items()}
            _grouped_bars(ax, names, {m: ([h for h, _ in b], [e for _, e in b]) for m, b in bars.items()})
            ax.set(ylabel="tensors among the top-k |Δ|", title="top-k layer attribution")
        else:
            for i, (m, d) in enumerate(curves.items()):
                taus = sorted(d["sparsity_curve"], key=float)
                ys = [
                    100 * d["sparsity_curve"][t]["pass@1"]["mean"]
                    if d["sparsity_curve"][t].get("pass@1")
                    else float("nan")
                    for t in taus
                ]
                ax.plot([float(t) for t in taus], ys, marker="o", color=_color(m, i), label=m)
            ax.set(
                xscale="log",
                xlabel="τ (updates below zeroed)",
                ylabel="Pass@1 (%)",
                title="thresholded export",
            )
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    return _save(fig, path)


def plot_ablations(ablations: dict[str, Any], path: Path) -> Path:
    """Per ablation: final reward (×100) and Pass@k (%) per value, ± sd; κ_pair next to the paper's."""
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
    fig, axes = _figure(len(panels))
    for ax, (name, rows, metrics) in zip(axes, panels):
        labels = list(rows)
        series = {}
        for metric in metrics:
            scale = 1.0 if metric == "kappa_pair" else 100.0
            bars = [_mean_sd(rows[label].get(metric), scale) for label in labels]
            title = {"final_reward": "final reward (×100)", "kappa_pair": "κ_pair"}.get(
                metric, f"{metric} (%)"
            )
            series[title] = ([h for h, _ in bars], [e for _, e in bars])
        _grouped_bars(ax, labels, series)
        if metrics == ["kappa_pair"]:
            refs = [
                (j, rows[label]["reference"])
                for j, label in enumerate(labels)
                if rows[label].get("reference")
            ]
            if refs:
                ax.scatter(*zip(*refs), marker="D", color="black", zorder=3, label="paper")
            ax.axhline(1.0, color="gray", linestyle="--", linewidth=1)
        ax.set(title=name + (": κ_pair (> 1: pairing adds noise)" if metrics == ["kappa_pair"] else ""))
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    return _save(fig, path)


def make_figures(report: dict[str, Any], output_dir: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Draw every figure whose inputs exist; ``({name: file}, {name: why it was skipped})``."""
    made: dict[str, str] = {}
    skipped: dict[str, str] = {}
    evaluations = report["evaluations"]
    rows = {m: r for m, r in evaluations["pass_at_k"].items() if any(r.values())}

    def attempt(name: str, ready: bool, why: str, draw: Any) -> None:
        if not ready:
            skipped[name] = why
            return
        try:
            made[name] = draw(output_dir / name).name
        except Exception as err:  # a figure must not cost the report
            skipped[name] = f"drawing failed: {type(err).__name__}: {err}"

    attempt(
        "pass_at_k.png",
        bool(rows),
        "no finished evaluation",
        lambda p: plot_pass_at_k(rows, p, evaluations["task"]),
    )
    for k in report["config"]["pareto_ks"]:
        data = report["pareto"].get(str(k))
        attempt(
            f"pareto_pass1_pass{k}.png",
            bool(data),
            f"no evaluation has pass@1 and pass@{k}",
            lambda p, d=data, k=k: plot_pareto(d, rows, evaluations["per_seed"], str(k), p),
        )
    curves = report["curves"]
    attempt(
        "entropy.png",
        bool(curves["entropy"]),
        "no run logged entropy/<task>",
        lambda p: plot_entropy(curves["entropy"], p),
    )
    attempt(
        "heldout.png",
        bool(curves["heldout"]),
        "no run logged heldout/<task>/pass@<k>",
        lambda p: plot_heldout(curves["heldout"], p),
    )
    drift = report["drift"]
    has_drift = any(
        d.get("sparsity") or d.get("top_k_by_kind") or d.get("sparsity_curve")
        for d in drift["methods"].values()
    )
    attempt("drift.png", has_drift, "no es-lightning analyze output", lambda p: plot_drift(drift, p))
    has_ablation = any(
        any(v for r in a["rows"].values() for v in r.values() if isinstance(v, dict))
        for a in report["ablations"].values()
    )
    attempt(
        "ablations.png",
        has_ablation,
        "no finished ablation run",
        lambda p: plot_ablations(report["ablations"], p),
    )
    return made, skipped
