"""The sparsity curve: Pass@1 of the thresholded checkpoints against s_τ (the paper's Figure 4).

Each point is one model: the checkpoint itself (τ = 0, s_τ = 0) and its thresholded exports θ_τ
(:mod:`es_lightning.analysis.threshold`). One engine serves them all: it starts on the checkpoint,
and each export's weights are then loaded into it (:meth:`~es_lightning.rollout.base.Rollout.load_weights`),
so a vLLM engine starts once. Every point is scored by the project's evaluation
(:func:`~es_lightning.evaluation.runner.evaluate_rows`) on the same prompts with the same sampling
seed; a point is ``{"tau", "s_tau", ..., "pass@1", "pass@2", ..., "greedy"}``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import torch

from es_lightning.evaluation.runner import EvalConfig, evaluate_rows
from es_lightning.rollout.base import Rollout
from es_lightning.tasks.base import Task
from es_lightning.weight_files import iter_weights, served_files


def evaluate_points(
    checkpoint: str,
    points: Iterable[dict[str, Any]],
    task: Task,
    evaluation: EvalConfig,
    rollout: Rollout,
    device: torch.device,
    dtype: str,
    completions_dir: Path,
) -> list[dict[str, Any]]:
    """Score every point's model on ``task``'s test split; returns the points with the summary added.

    Args:
        checkpoint: the folder the engine starts on (the unthresholded checkpoint).
        points: ``{"tau", "folder", ...}`` each, evaluated in order; the engine loads a point's
            served weights unless they are the ones it holds (it starts with ``checkpoint``'s).
        task: the task, its test split evaluated.
        evaluation: samples per prompt, temperature, prompt limit, seed.
        rollout: the generation backend (closed at the end).
        device: where the engine runs.
        dtype: the engine's weights dtype name (``auto``: bf16 on CUDA, fp32 on CPU).
        completions_dir: where ``completions-tau-<tau>.jsonl`` of each point go.
    """
    from es_lightning.module import ReasoningModule

    rows = task.load("test")  # fail on bad data before the engine starts
    module = ReasoningModule(model=checkpoint, task=task, dtype=dtype)  # type: ignore[arg-type]
    module.check_model_source()
    rollout.setup(module.model, device, module.torch_dtype(device))
    if hasattr(rollout, "start"):
        rollout.start()
    completions_dir.mkdir(parents=True, exist_ok=True)
    scored, loaded = [], str(Path(module.model))
    try:
        for point in points:
            if str(Path(point["folder"])) != loaded:
                rollout.load_weights(iter_weights(served_files(point["folder"]), dtype=None))
                loaded = str(Path(point["folder"]))
            result = evaluate_rows(module, rollout, rows, evaluation)
            result.write_completions(completions_dir / f"completions-tau-{point['tau']:g}.jsonl")
            scored.append({**point, **result.summary})
    finally:
        rollout.close()
    return scored


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
) -> dict[str, Any]:
    """Evaluate the checkpoint (τ = 0) then each export as it is produced, and plot the curve.

    Args:
        analysis: the checkpoint's analysis in the view the exports were thresholded in (its
            ``numel`` and ``nonzero`` give the τ = 0 point).
        checkpoint: the checkpoint's folder.
        exports: records of :func:`~es_lightning.analysis.threshold.export_thresholded`, possibly
            produced lazily (:func:`~es_lightning.analysis.threshold.export_all`).
        task: the task evaluated.
        evaluation: how it is evaluated.
        rollout: the generation backend.
        device: its device.
        dtype: its weights dtype name.
        completions_dir: where each point's completions go.
        png: the plot to write.

    Returns:
        ``{"thresholded": [export record, ...], "sparsity_curve": [point, ...], "sparsity_curve_png": str}``.
    """
    records: list[dict[str, Any]] = []
    view = analysis.get("view", "stored")
    unthresholded = {
        "tau": 0.0,
        "folder": str(checkpoint),
        "view": view,
        "numel": analysis["numel"],
        "nonzero": analysis["nonzero"],
        "kept": analysis["nonzero"],
        "reverted": 0,
        "s_tau": 0.0,
    }

    def points() -> Iterator[dict[str, Any]]:
        yield unthresholded
        for record in exports:
            records.append(record)
            yield record

    curve = evaluate_points(
        str(checkpoint), points(), task, evaluation, rollout, device, dtype, completions_dir
    )
    title = f"{task.name}: Pass@1 of thresholded checkpoints ({view} view)"
    return {
        "thresholded": records,
        "sparsity_curve": curve,
        "sparsity_curve_png": str(plot_sparsity_curve(curve, png, title)),
    }


def plot_sparsity_curve(curve: list[dict[str, Any]], path: Path, title: str | None = None) -> Path:
    """Pass@1 (%) against s_τ (%) with each point labelled by its τ; returns ``path``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    points = sorted((p for p in curve if p.get("s_tau") is not None), key=lambda p: p["s_tau"])
    if not points:
        raise ValueError("plot_sparsity_curve: no point has an s_tau")
    fig = Figure(figsize=(6.4, 4.4), dpi=120)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    xs = [100.0 * p["s_tau"] for p in points]
    ys = [100.0 * p["pass@1"] for p in points]
    ax.plot(xs, ys, marker="o", linewidth=1.8)
    for p, x, y in zip(points, xs, ys):
        ax.annotate(f"τ={p['tau']:g}", (x, y), textcoords="offset points", xytext=(4, 6), fontsize=8)
    ax.set_xlabel("s_τ: share of updates reverted (%)")
    ax.set_ylabel("Pass@1 (%)")
    ax.set_title(title or "Pass@1 of magnitude-thresholded checkpoints")
    ax.grid(True, alpha=0.3)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path
