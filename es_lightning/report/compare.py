"""``es-lightning compare``: the final evaluations of several runs side by side.

One column per run (its folder name; a pipeline's last stage), and first the starting model's
evaluation (the first run's ``eval/before.json``) when there is one::

    es-lightning compare runs/demo_cpu runs/demo_cpu_grpo --output runs/compare

prints the table of :func:`~es_lightning.evaluation.table.format_table` and, with ``--output``,
writes ``compare.json`` (``{column: {task: summary}}``), ``compare.txt`` (the table) and
``pass_at_k_<task>.png`` (the runs' Pass@K profiles overlaid, one per task).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from es_lightning.errors import ConfigError, MissingPathError
from es_lightning.evaluation.plots import plot_pass_at_k
from es_lightning.evaluation.table import format_table
from es_lightning.report.readers import pass_at_k, read_after, read_before

START = "start"
"""The column of the starting model's evaluation."""


def run_compare(
    runs: list[Path], task: str | None = None, output: Path | None = None, start: bool = True
) -> dict[str, Any]:
    """Compare the final evaluations of ``runs``.

    Args:
        runs: run folders (``trainer.output_dir`` of ``fit``, single runs or pipelines).
        task: only this task (default: every task the runs evaluated).
        output: folder for ``compare.json``, ``compare.txt`` and the Pass@K plots.
        start: add the starting model's evaluation (the first run's ``eval/before.json``).

    Returns:
        ``{column: {task: summary}}`` as tabulated.
    """
    if not runs:
        raise ConfigError("compare: give at least one run folder")
    columns: dict[str, dict[str, Any]] = {}
    for run in map(Path, runs):
        if not run.is_dir():
            raise MissingPathError(f"compare: run folder {str(run)!r} does not exist")
        after = read_after(run)
        if after is None:
            raise ConfigError(
                f"compare: {run} has no final evaluation (eval/after.json); did the run finish?"
            )
        if start and not columns:
            before = read_before(run)
            if before is not None:
                columns[START] = before
        label, n = run.name, 2
        while label in columns:  # two runs of the same folder name
            label, n = f"{run.name} ({n})", n + 1
        columns[label] = after
    if task is not None:
        if not any(task in summaries for summaries in columns.values()):
            known = sorted({t for summaries in columns.values() for t in summaries})
            raise ConfigError(f"compare: no run evaluated task {task!r}; they evaluated {known}")
        columns = {label: {task: s[task]} for label, s in columns.items() if task in s}
    table = format_table(columns)
    print(table, flush=True)
    if output is not None:
        output = Path(output)
        output.mkdir(parents=True, exist_ok=True)
        (output / "compare.json").write_text(json.dumps(columns, indent=2))
        (output / "compare.txt").write_text(table + "\n")
        tasks = dict.fromkeys(t for summaries in columns.values() for t in summaries)
        for name in tasks:
            curves = {label: pass_at_k(s.get(name)) for label, s in columns.items()}
            curves = {label: curve for label, curve in curves.items() if curve}
            if curves:
                plot_pass_at_k(curves, output / f"pass_at_k_{name}.png", title=f"{name}: Pass@K")
    return columns
