"""Evaluate one model on one or several tasks in one engine; write JSON, completions, plots, a table.

``{output}`` holds ``{task: summary}`` (plus ``"average"`` over tasks when there are several);
``{stem}_completions.jsonl`` (one task) or ``{stem}_{task}_completions.jsonl`` can be re-scored
offline; ``{stem}_pass_at_k.png`` / ``{stem}_{task}_pass_at_k.png`` plot the Pass@K profile.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from es_lightning.evaluation.runner import EvalConfig, evaluate_rows
from es_lightning.evaluation.summary import average_over_tasks
from es_lightning.evaluation.table import print_table
from es_lightning.models.loading import ModelLoading
from es_lightning.rollout.base import Rollout, setup_rollout
from es_lightning.tasks.base import Task


def evaluate_model(
    model: str,
    tasks: dict[str, Task],
    evaluation: EvalConfig,
    rollout: Rollout,
    output: Path,
    device: torch.device,
    dtype: str = "auto",
    loading: ModelLoading | None = None,
) -> dict[str, dict[str, float]]:
    """Sample, score and summarise ``model`` on every task; returns what ``output`` holds.

    ``loading`` (revision, trust_remote_code, model_kwargs) says how the model is loaded."""
    from es_lightning.evaluation.plots import plot_pass_at_k
    from es_lightning.module import ReasoningModule

    rows = {
        name: task.load(evaluation.split) for name, task in tasks.items()
    }  # fail on bad data before the engine starts
    loading = loading or ModelLoading()
    first = ReasoningModule(
        model=model,
        task=next(iter(tasks.values())),
        dtype=dtype,
        revision=loading.revision,
        trust_remote_code=loading.trust_remote_code,
        model_kwargs=loading.model_kwargs,
    )
    first.check_model_source()
    setup_rollout(rollout, first.model, device, first.torch_dtype(device), first.loading)
    if hasattr(rollout, "start"):
        rollout.start()
    summaries: dict[str, dict[str, float]] = {}
    stem = Path(output).with_suffix("")
    try:
        for name, task in tasks.items():
            result = evaluate_rows(first.with_task(task), rollout, rows[name], evaluation, progress=True)
            summaries[name] = result.summary
            suffix = "" if len(tasks) == 1 else f"_{name}"
            result.write_completions(f"{stem}{suffix}_completions.jsonl")
            curve = {int(k[5:]): v for k, v in result.summary.items() if k.startswith("pass@")}
            plot_pass_at_k(
                {Path(model).name or model: curve}, f"{stem}{suffix}_pass_at_k.png", title=f"{name}: Pass@K"
            )
    finally:
        rollout.close()
    if len(summaries) > 1:
        summaries = average_over_tasks(summaries)
    write_summary(Path(output), summaries, label=Path(model).name or model)
    return summaries


def write_summary(path: Path, summaries: dict[str, Any], label: str | None = None) -> None:
    """The JSON file, and its pass@k / maj@k / greedy per task on stdout as one column of
    :func:`~es_lightning.evaluation.table.format_table` headed ``label`` (default: the file's stem)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(summaries, indent=2))
    print_table({label or path.stem: summaries})
    print(f"written: {path}")
