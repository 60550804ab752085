"""``es-lightning compare``: the final evaluations of several runs side by side, after a warning
naming every setting they differ in::

    es-lightning compare runs/demo_cpu runs/demo_cpu_grpo --output runs/compare

The settings checked are those the numbers depend on (model, prompts, task, evaluation, and what
the final evaluation covered). A key some runs lack is skipped: a setting added since keeps the old
behaviour by default.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from es_lightning.errors import ConfigError, MissingPathError
from es_lightning.evaluation.columns import format_table
from es_lightning.evaluation.plots import plot_change_from_start, plot_pass_at_k
from es_lightning.report.readers import module_args, pass_at_k, read_after, read_before, run_config

START = "start"
"""The column of the starting model's evaluation."""
MODULE_KEYS = ("model", "tokenizer", "revision", "chat_template", "plain_template", "max_prompt_tokens")
"""The ``module`` settings compared (the task is compared under ``task.*``)."""
EVAL_JSON_KEYS = ("n_prompts", "n_samples", "split")
"""The keys of each task's final evaluation compared."""


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
    columns: dict[str, dict[str, Any]] = {}  # {column: final evaluation}, the start column first
    folders: dict[str, Path] = {}  # {column: run folder}
    for run in map(Path, runs):
        if not run.is_dir():
            raise MissingPathError(f"compare: run folder {str(run)!r} does not exist")
        after = read_after(run)
        if after is None:
            raise ConfigError(
                f"compare: {run} has no final evaluation (eval/after.json); did the run finish?"
            )
        if start and not columns and (before := read_before(run)) is not None:
            columns[START] = before
        label, n = run.name, 2
        while label in columns:  # two runs of the same folder name
            label, n = f"{run.name} ({n})", n + 1
        columns[label], folders[label] = after, run
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


def _flatten(value: Any, prefix: str) -> dict[str, Any]:
    """``{"a.b.c": leaf}`` of nested mappings (lists and scalars are leaves)."""
    if not isinstance(value, Mapping):
        return {prefix: value}
    out: dict[str, Any] = {}
    for key, inner in value.items():
        out.update(_flatten(inner, f"{prefix}.{key}"))
    return out


def run_settings(run_dir: Path, final: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The compared settings of one run, or ``None``."""
    config = run_config(run_dir)
    out: dict[str, Any] = {}
    if config is not None:
        module = module_args(config)
        out.update({key: module[key] for key in MODULE_KEYS if key in module})
        if "task" in module:
            out.update(_flatten(module["task"], "task"))
        if isinstance(config.get("evaluation"), Mapping):
            out.update(_flatten(config["evaluation"], "evaluation"))
        if "eval_tasks" in config:
            out["eval_tasks"] = json.dumps(config["eval_tasks"], sort_keys=True)
    for task, summary in (final or {}).items():
        if isinstance(summary, Mapping):
            out.update({f"{task}.{key}": summary[key] for key in EVAL_JSON_KEYS if key in summary})
    return out or None


def differing(settings: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """``{key: {run: value}}`` for every key all runs hold and not all with the same value.

    >>> differing({"a": {"evaluation.temperature": 0.6, "model": "m"},
    ...            "b": {"evaluation.temperature": 1.0, "model": "m", "evaluation.top_k": 0}})
    {'evaluation.temperature': {'a': 0.6, 'b': 1.0}}
    """
    if len(settings) < 2:
        return {}
    runs = list(settings.values())
    shared = [key for key in runs[0] if all(key in other for other in runs[1:])]
    return {
        key: {label: values[key] for label, values in settings.items()}
        for key in shared
        if any(other[key] != runs[0][key] for other in runs[1:])
    }


def warning_text(differences: Mapping[str, Mapping[str, Any]], unknown: list[str]) -> str | None:
    """The warning ``compare`` prints, or ``None`` when there is nothing to warn about."""
    lines = []
    if differences:
        lines.append(
            f"es-lightning: warning: the runs differ in {', '.join(differences)}; their numbers are "
            "not comparable as they stand:"
        )
        for key, values in differences.items():
            lines.append(f"  {key}: " + ", ".join(f"{label} {value!r}" for label, value in values.items()))
    if unknown:
        lines.append(
            f"es-lightning: warning: no config.yaml in {', '.join(unknown)}: "
            "their evaluation settings, task and starting model are not checked"
        )
    return "\n".join(lines) or None
