"""The plain-text table of evaluation results: one row per task and metric, one column per
evaluation, an optional ``change`` column in points and, with ``details``, the mean reward,
response length and truncated share::

    task             metric       before    after   change
    arithmetic       pass@1        47.7%    72.7%    +25.0
"""

from __future__ import annotations

from collections.abc import Mapping

from es_lightning.evaluation.summary import is_accuracy_key

Summaries = Mapping[str, Mapping[str, float]]
"""One evaluation: ``{task: {metric: value}}``."""

MISSING = "-"
"""The cell of a row that a column lacks."""

DETAILS = {
    "mean_reward": (1.0, ".3f", ""),
    "response_len": (1.0, ".1f", ""),
    "truncated_frac": (100.0, ".1f", "%"),
}
"""The detail rows: ``{key: (scale, format, unit)}``; a difference is in the same scale and format."""


def _row_order(key: str) -> tuple[int, int, str]:
    """``pass@k`` (k ascending), then ``maj@k``, then ``greedy``."""
    kind, _, k = key.partition("@")
    rank = {"pass": 0, "maj": 1}.get(kind, 2)
    return rank, int(k) if k.isdigit() else 0, key


def _rows(columns: Mapping[str, Summaries], details: bool = False) -> list[tuple[str, str]]:
    """``(task, metric)`` of every accuracy any column holds (then its detail rows, when asked)."""
    keys: dict[str, set[str]] = {}  # task -> metrics, tasks in the order first seen
    for summaries in columns.values():
        for task, summary in summaries.items():
            keys.setdefault(task, set()).update(
                k for k in summary if is_accuracy_key(k) or (details and k in DETAILS)
            )
    order = {key: i for i, key in enumerate(DETAILS)}
    return [
        (task, key)
        for task, found in keys.items()
        for key in sorted(found, key=lambda k: (k in order, order.get(k, 0), _row_order(k)))
    ]


def _cell(key: str, value: float | None, sign: bool = False) -> str:
    """One cell: an accuracy in percent (a difference in points), a detail row as :data:`DETAILS` says."""
    if value is None:
        return MISSING
    scale, spec, unit = DETAILS.get(key, (100.0, ".1f", "%"))
    return f"{scale * value:+{spec}}" if sign else f"{scale * value:{spec}}{unit}"


def format_table(
    columns: Mapping[str, Summaries], difference: str | None = None, details: bool = False
) -> str:
    """The table of ``columns`` (``""`` for none); ``difference`` labels a change column (two columns)."""
    if difference is not None and len(columns) != 2:
        raise ValueError(
            f"format_table: a difference column needs exactly two columns, got {len(columns)} ({list(columns)})"
        )
    if not columns:
        return ""
    rows = _rows(columns, details)
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
        cells = [_cell(key, v) for v in values]
        if difference is not None:
            first, second = values
            cells.append(_cell(key, None if first is None or second is None else second - first, sign=True))
        lines.append(line(task, key, cells))
    return "\n".join(lines)


def print_table(
    columns: Mapping[str, Summaries], difference: str | None = None, details: bool = False
) -> None:
    """Print :func:`format_table` of the arguments (nothing when there are no columns)."""
    text = format_table(columns, difference=difference, details=details)
    if text:
        print(text, flush=True)
