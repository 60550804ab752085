"""The sparsity curve: Pass@1 of the thresholded checkpoints against s_τ (the paper's Figure 4).

The checkpoint (τ = 0), its exports θ_τ and the base θ_0 are scored by one engine on the same prompts
and seed, so "the pruned model keeps the gain" is read on one set of random numbers.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import torch

from es_lightning.analysis.pair import tensor_specs
from es_lightning.analysis.threshold import served_dtype
from es_lightning.evaluation.runner import EvalConfig, evaluate_rows
from es_lightning.rollout.base import Rollout
from es_lightning.tasks.base import Task
from es_lightning.weight_files import iter_weights, served_files


def sparsity_curve(
    analysis: dict[str, Any],
    checkpoint: Path,
    exports: Iterable[dict[str, Any]],
    task: Task,
    evaluation: EvalConfig,
    rollout: Rollout,
    device: torch.device,
    dtype: str,
    completions_dir: Path,
    png: Path,
    base: Path | None = None,
) -> dict[str, Any]:
    """Evaluate the checkpoint (τ = 0), each export as it is produced, then ``base``, and plot the
    curve to ``png``; the base's point (s_τ = 1) is θ_τ for τ ≥ max|Δθ| bit for bit."""
    from es_lightning.module import ReasoningModule

    records: list[dict[str, Any]] = []
    view = analysis.get("view", "stored")
    unthresholded = _unthresholded(analysis, checkpoint, view)

    def points() -> Iterator[dict[str, Any]]:
        yield unthresholded
        for record in exports:
            records.append(record)
            yield record
        if base is not None:  # cast as the exports are: θ_τ for τ ≥ max|Δθ|, bit for bit
            nonzero, served = analysis["nonzero"], served_dtype(tensor_specs(served_files(checkpoint)))
            yield {"tau": None, "base": True, "folder": str(base), "view": view, "numel": analysis["numel"],
                   "nonzero": nonzero, "kept": 0, "reverted": nonzero, "s_tau": 1.0,
                   "served_dtype": str(served).removeprefix("torch.")}  # fmt: skip

    rows = task.load("test")  # fail on bad data before the engine starts
    module = ReasoningModule(model=str(checkpoint), task=task, dtype=dtype)  # type: ignore[arg-type]
    module.check_model_source()
    rollout.setup(module.model, device, module.torch_dtype(device))
    if hasattr(rollout, "start"):
        rollout.start()
    completions_dir.mkdir(parents=True, exist_ok=True)
    scored, loaded = [], str(Path(module.model))
    try:  # one engine started on the checkpoint: each point's weights are loaded into it
        for point in points():
            if str(Path(point["folder"])) != loaded:
                cast = getattr(torch, point["served_dtype"]) if point.get("served_dtype") else None
                rollout.load_weights(iter_weights(served_files(point["folder"]), dtype=cast))
                loaded = str(Path(point["folder"]))
            result = evaluate_rows(module, rollout, rows, evaluation)
            name = "base" if point.get("base") else f"tau-{point['tau']:g}"
            result.write_completions(completions_dir / f"completions-{name}.jsonl")
            scored.append({**point, **result.summary})
    finally:
        rollout.close()
    curve = [p for p in scored if not p.get("base")]
    base_point = next((p for p in scored if p.get("base")), None)
    title = f"{task.name}: Pass@1 of thresholded checkpoints ({view} view)"
    return {
        "thresholded": records,
        "sparsity_curve": curve,
        "sparsity_curve_base": base_point,
        "sparsity_curve_png": str(plot_sparsity_curve(curve, png, title, base_point)),
    }


def _unthresholded(analysis: dict[str, Any], checkpoint: Path, view: str) -> dict[str, Any]:
    """The checkpoint itself, the curve's first point (τ = 0): every change kept, none reverted."""
    return {
        "tau": 0.0,
        "folder": str(checkpoint),
        "view": view,
        "numel": analysis["numel"],
        "nonzero": analysis["nonzero"],
        "kept": analysis["nonzero"],
        "reverted": 0,
        "s_tau": 0.0,
    }


def plot_sparsity_curve(
    curve: list[dict[str, Any]], path: Path, title: str | None = None, base: dict[str, Any] | None = None
) -> Path:
    """Pass@1 (%) against s_τ (%), each point labelled by its τ, the base dashed; returns ``path``."""
    from es_lightning.evaluation.plots import save_png

    points = sorted((p for p in curve if p.get("s_tau") is not None), key=lambda p: p["s_tau"])
    if not points:
        raise ValueError("plot_sparsity_curve: no point has an s_tau")

    def draw(ax: Any) -> None:
        xs = [100.0 * p["s_tau"] for p in points]
        ys = [100.0 * p["pass@1"] for p in points]
        ax.plot(xs, ys, marker="o", linewidth=1.8)
        for p, x, y in zip(points, xs, ys):
            ax.annotate(f"τ={p['tau']:g}", (x, y), textcoords="offset points", xytext=(4, 6), fontsize=8)
        if base is not None and base.get("pass@1") is not None:
            label = "base (every update reverted)"
            ax.axhline(100.0 * base["pass@1"], color="gray", linestyle="--", linewidth=1, label=label)
            ax.legend(loc="best", fontsize=8)
        ax.set_xlabel("s_τ: share of updates reverted (%)")
        ax.set_ylabel("Pass@1 (%)")
        ax.grid(True, alpha=0.3)

    return save_png(path, title or "Pass@1 of magnitude-thresholded checkpoints", draw)
