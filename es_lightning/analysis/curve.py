"""The sparsity curve: Pass@1 of the thresholded checkpoints against s_τ (the paper's Figure 4).

Each point is one model: the checkpoint itself (τ = 0, s_τ = 0) and its thresholded exports θ_τ
(:mod:`es_lightning.analysis.threshold`), and last the base model θ_0 (every update reverted: what
θ_τ is for τ ≥ max|Δθ|), scored the same way so that "the pruned model keeps the gain" is read on
one engine and one set of random numbers (``sparsity_curve_base``). One engine serves them all: it starts on the checkpoint,
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

from es_lightning.analysis.pair import tensor_specs
from es_lightning.analysis.threshold import served_dtype
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
                cast = getattr(torch, point["served_dtype"]) if point.get("served_dtype") else None
                rollout.load_weights(iter_weights(served_files(point["folder"]), dtype=cast))
                loaded = str(Path(point["folder"]))
            result = evaluate_rows(module, rollout, rows, evaluation)
            name = "base" if point.get("base") else f"tau-{point['tau']:g}"
            result.write_completions(completions_dir / f"completions-{name}.jsonl")
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
    base: Path | None = None,
) -> dict[str, Any]:
    """Evaluate the checkpoint (τ = 0), each export as it is produced, then the base, and plot
    the curve.

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
        base: the base model's folder, scored last (``completions-base.jsonl``); ``None``: not scored.

    Returns:
        ``{"thresholded": [export record, ...], "sparsity_curve": [point, ...],
        "sparsity_curve_base": point | None, "sparsity_curve_png": str}``; the base's point has
        ``"base": true``, ``tau`` ``None``, s_τ = 1 and the exports' ``served_dtype`` (the base's
        weights are cast to it, so the point is θ_τ for τ ≥ max|Δθ| bit for bit).
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
        if base is not None:  # cast as the exports are: θ_τ for τ ≥ max|Δθ|, bit for bit
            nonzero, dtype = analysis["nonzero"], served_dtype(tensor_specs(served_files(checkpoint)))
            yield {"tau": None, "base": True, "folder": str(base), "view": view, "numel": analysis["numel"],
                   "nonzero": nonzero, "kept": 0, "reverted": nonzero, "s_tau": 1.0,
                   "served_dtype": str(dtype).removeprefix("torch.")}  # fmt: skip

    scored = evaluate_points(
        str(checkpoint), points(), task, evaluation, rollout, device, dtype, completions_dir
    )
    curve = [p for p in scored if not p.get("base")]
    base_point = next((p for p in scored if p.get("base")), None)
    title = f"{task.name}: Pass@1 of thresholded checkpoints ({view} view)"
    return {
        "thresholded": records,
        "sparsity_curve": curve,
        "sparsity_curve_base": base_point,
        "sparsity_curve_png": str(plot_sparsity_curve(curve, png, title, base_point)),
    }


def plot_sparsity_curve(
    curve: list[dict[str, Any]], path: Path, title: str | None = None, base: dict[str, Any] | None = None
) -> Path:
    """Pass@1 (%) against s_τ (%) with each point labelled by its τ, and the base's Pass@1 as a
    dashed line when ``base`` is given; returns ``path``."""
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
    if base is not None and base.get("pass@1") is not None:
        ax.axhline(
            100.0 * base["pass@1"],
            color="gray",
            linestyle="--",
            linewidth=1,
            label="base (every update reverted)",
        )
        ax.legend(loc="best", fontsize=8)
    ax.set_xlabel("s_τ: share of updates reverted (%)")
    ax.set_ylabel("Pass@1 (%)")
    ax.set_title(title or "Pass@1 of magnitude-thresholded checkpoints")
    ax.grid(True, alpha=0.3)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path
