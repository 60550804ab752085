"""Evaluation: Pass@K, majority vote, summaries, offline re-scoring, the results table and plots."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from es_lightning.evaluation.columns import format_table, print_table
from es_lightning.evaluation.majority import maj_at_k, majority_vote
from es_lightning.evaluation.offline import score_completions_file, write_completions_file
from es_lightning.evaluation.pass_at_k import pass_at_k, pass_at_k_curve
from es_lightning.evaluation.summary import (
    CORRECT_THRESHOLD,
    average_over_tasks,
    is_accuracy_key,
    is_correct,
    metric_names,
    summarize,
)

if TYPE_CHECKING:
    from es_lightning.evaluation.metric import PassAtK
    from es_lightning.evaluation.plots import plot_pass_at_k

_LAZY = {"PassAtK": "es_lightning.evaluation.metric", "plot_pass_at_k": "es_lightning.evaluation.plots"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CORRECT_THRESHOLD",
    "PassAtK",
    "average_over_tasks",
    "format_table",
    "is_accuracy_key",
    "is_correct",
    "maj_at_k",
    "majority_vote",
    "metric_names",
    "pass_at_k",
    "pass_at_k_curve",
    "plot_pass_at_k",
    "print_table",
    "score_completions_file",
    "summarize",
    "write_completions_file",
]
