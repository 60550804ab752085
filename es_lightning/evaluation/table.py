"""The plain-text table of evaluation results: one row per task and metric, one column per evaluation.

``columns`` maps a column's label (``"before"``, ``"after es"``, a model's name) to what one
evaluation wrote, ``{task: summary}`` (the JSON of :func:`~es_lightning.evaluation.command.write_summary`
and of the trainer's ``eval/{tag}.json``). The rows are every task that any column holds, in the
order first seen, and within a task its ``pass@k``, ``maj@k`` and ``greedy`` keys (k ascending;
counts and task extras are left out). A cell is the value in percent, ``-`` where a column lacks
the row. With two columns, ``difference="change"`` adds a column ``change = 100·(second − first)``
in percentage points::

    task             metric       before    after   change
    arithmetic       pass@1        47.7%    72.7%    +25.0
    arithmetic       pass@16      100.0%   100.0%     +0.0
    arithmetic       greedy        79.5%    97.0%    +17.5
"""

from __future__ import annotations

from collections.abc import Mapping

from es_lightning.evaluation.summary import is_accuracy_key

Summaries = Mapping[str, Mapping[str, float]]
"""One evaluation: ``{task: {metric: value}}``."""

MISSING = "-"
"""The cell of a row that a column lacks."""


def _row_order(key: str) -> tuple[int, int, str]:
    """``pass@k`` (k ascending), then ``maj@k``, then ``greedy``."""
    kind, _, k = key.partition("@")
    rank = {"pass": 0, "maj": 1}.get(kind, 2)
    return rank, int(k) if k.isdigit() else 0, key


def _rows(columns: Mapping[str, Summaries]) -> list[tuple[str, str]]:
    """``(task, metric)`` of every accuracy any column holds."""
    keys: dict[str, set[str]] = {}  # task -> metrics, tasks in the order first seen
    for summaries in columns.values():
        for task, summary in summaries.items():
            keys.setdefault(task, set()).update(k for k in summary if is_accuracy_key(k))
    return [(task, key) for task, found in keys.items() for key in sorted(found, key=_row_order)]


def format_table(columns: Mapping[str, Summaries], difference: str | None = None) -> str:
    """The table of ``columns`` (see the module docstring); ``""`` when there are no columns.

    Args:
        columns: ``{label: {task: summary}}``, one entry per column, in column order.
        difference: when given, the label of an added last column holding
            ``100·(second − first)`` in percentage points (``-`` where either value is missing).

    Returns:
        The lines of the table joined by newlines (no trailing newline).

    Raises:
        ValueError: when ``difference`` is given but there are not exactly two columns.
    """
    if difference is not None and len(columns) != 2:
        raise ValueError(
            f"format_table: a difference column needs exactly two columns, got {len(columns)} ({list(columns)})"
        )
    if not columns:
        return ""
    rows = _rows(columns)
    labels = list(columns)
    task_width = max([16, *(len(task) for task, _ in rows)])
    metric_width = max([10, *(len(key) for _, key in rows)])
    headers = labels + ([difference] if difference is not None else [])
    widths = [max(8, len(h) + 2) for h in headers]  # each label keeps 3+ spaces to its left

    def line(task: str, metric: str, cells: list[str]) -> str:
        body = "".join(f" {cell:>{w}}" for cell, w in zip(cells, widths, strict=True))
        return f"{task:<{task_width}} {metric:<{metric_width}}{body}"

    lines = [line("task", "metric", headers)]
    for task, key in rows:
        values = [columns[label].get(task, {}).get(key) for label in labels]
        cells = [MISSING if v is None else f"{100 * v:.1f}%" for v in values]
        if difference is not None:
            first, second = values
            cells.append(MISSING if first is None or second is None else f"{100 * (second - first):+.1f}")
        lines.append(line(task, key, cells))
    return "\n".join(lines)


def print_table(columns: Mapping[str, Summaries], difference: str | None = None) -> None:
    """Print :func:`format_table` of the arguments (nothing when there are no columns)."""
    text = format_table(columns, difference=difference)
    if text:
        print(text, flush=True)
