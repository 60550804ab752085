"""What ``compare`` checks before it puts runs side by side: the settings their numbers depend on
(model, prompts, task, evaluation, and what the final evaluation covered). A key some runs lack
is skipped: a setting added since keeps the old behaviour by default.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from es_lightning.report.readers import module_args, run_config

MODULE_KEYS = ("model", "tokenizer", "revision", "chat_template", "plain_template", "max_prompt_tokens")
"""The ``module`` settings compared (the task is compared under ``task.*``)."""
EVAL_JSON_KEYS = ("n_prompts", "n_samples", "split")
"""The keys of each task's final evaluation compared."""


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
