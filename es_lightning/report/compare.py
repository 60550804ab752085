"""``es-lightning compare``: the final evaluations of several runs side by side, after a warning
naming every setting they differ in (:mod:`~es_lightning.report.compare_settings`)::

    es-lightning compare runs/demo_cpu runs/demo_cpu_grpo --output runs/compare
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from es_lightning.errors import ConfigError, MissingPathError
from es_lightning.evaluation.change_plot import plot_change_from_start
from es_lightning.evaluation.columns import format_table
from es_lightning.evaluation.plots import plot_pass_at_k
from es_lightning.report.compare_settings import differing, run_settings, warning_text
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
        output: folder for ``compare.json``, ``compare.txt``, ``compare_settings.json`` and the
            Pass@K plots.
        start: add the starting model's evaluation (the first run's ``eval/before.json``).

    Returns:
        ``{column: {task: summary}}`` as tabulated.
    """
    if not runs:
        raise ConfigError("compare: give at least one run folder")
    columns, folders = _read_columns([Path(run) for run in runs], start)
    if task is not None:
        if not any(task in summaries for summaries in columns.values()):
            known = sorted({t for summaries in columns.values() for t in summaries})
            raise ConfigError(f"compare: no run evaluated task {task!r}; they evaluated {known}")
        columns = {label: {task: s[task]} for label, s in columns.items() if task in s}
    record = check_settings(columns, folders)
    table = format_table(columns, details=True)
    print(table, flush=True)
    if output is not None:
        _write(Path(output), columns, table, record)
    return columns


def _read_columns(runs: list[Path], start: bool) -> tuple[dict[str, dict[str, Any]], dict[str, Path]]:
    """``({column: final evaluation}, {column: run folder})``, the start column first when asked."""
    columns: dict[str, dict[str, Any]] = {}
    folders: dict[str, Path] = {}
    for run in runs:
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
        columns[label], folders[label] = after, run
    return columns, folders


def check_settings(columns: dict[str, dict[str, Any]], folders: dict[str, Path]) -> dict[str, Any]:
    """Warn on stderr naming each setting the runs differ in; returns the settings and the differences."""
    settings = {label: run_settings(run, columns.get(label)) or {} for label, run in folders.items()}
    differences = differing(settings)
    unknown = [label for label, run in folders.items() if not (run / "config.yaml").is_file()]
    warning = warning_text(differences, unknown if len(folders) > 1 else [])
    if warning is not None:
        print(warning, file=sys.stderr, flush=True)
    return {"settings": settings, "differing": differences}


def _write(output: Path, columns: dict[str, dict[str, Any]], table: str, record: dict[str, Any]) -> None:
    """``compare.json``, ``compare.txt``, ``compare_settings.json`` and one Pass@K plot per task."""
    output.mkdir(parents=True, exist_ok=True)
    (output / "compare.json").write_text(json.dumps(columns, indent=2))
    (output / "compare.txt").write_text(table + "\n")
    (output / "compare_settings.json").write_text(json.dumps(record, indent=2, default=str))
    tasks = dict.fromkeys(t for summaries in columns.values() for t in summaries)
    for name in tasks:
        curves = {label: pass_at_k(s.get(name)) for label, s in columns.items()}
        curves = {label: curve for label, curve in curves.items() if curve}
        problems = {label: s[name].get("n_prompts") for label, s in columns.items() if name in s}
        if curves:  # the starting model's noise band (its column comes first)
            path = output / f"pass_at_k_{name}.png"
            plot_pass_at_k(curves, path, title=f"{name}: Pass@K", problems=problems)
        if START in curves and len(curves) > 1:
            path = output / f"change_{name}.png"
            title = f"{name}: Pass@K change from the start"
            plot_change_from_start(curves, START, path, title=title, problems=problems)
