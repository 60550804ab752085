"""Re-score saved completions: a JSONL file of dataset rows, each with its sampled completions::

    {"question": "...", "answer": "... #### 18", "completions": ["...", "..."], "greedy": "..."}

:func:`write_completions_file` writes it, :func:`score_completions_file` re-scores it. Evaluation
files are strict JSON: a non-finite number is written as ``null`` (:func:`strict_dumps`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from es_lightning.errors import ConfigError, MissingPathError
from es_lightning.evaluation.summary import summarize
from es_lightning.tasks.base import Task

COMPLETIONS_KEY = "completions"
GREEDY_KEY = "greedy"
REWARDS_KEY = "rewards"
GREEDY_REWARD_KEY = "greedy_reward"


def finite_or_none(value: Any) -> Any:
    """``value`` with every non-finite float (NaN, ±inf), however deeply nested, replaced by ``None``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_or_none(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_none(v) for v in value]
    return value


def strict_dumps(value: Any, **kwargs: Any) -> str:
    """:func:`json.dumps` of :func:`finite_or_none` of ``value``, with ``allow_nan=False``."""
    return json.dumps(finite_or_none(value), allow_nan=False, **kwargs)


def _read_rows(path: Path) -> tuple[list[dict[str, Any]], list[int], list[list[str]], list[str] | None]:
    """Rows (without the completion fields), their line numbers, completions per row and greedy ones."""
    rows: list[dict[str, Any]] = []
    line_nos: list[int] = []
    completions: list[list[str]] = []
    greedy: list[str] = []
    with path.open(encoding="utf-8") as f:
        for line_no, line in enumerate(f, start=1):
            if not line.strip():
                continue
            where = f"{path} line {line_no}"
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                raise ConfigError(f"{where}: invalid JSON ({e.msg} at column {e.colno})") from e
            if not isinstance(record, dict):
                raise ConfigError(f"{where}: expected a JSON object, got {type(record).__name__}")
            if COMPLETIONS_KEY not in record:
                raise ConfigError(f"{where}: missing {COMPLETIONS_KEY!r}; it has keys {sorted(record)}")
            samples = record.pop(COMPLETIONS_KEY)
            if not isinstance(samples, list) or not samples or not all(isinstance(s, str) for s in samples):
                raise ConfigError(f"{where}: {COMPLETIONS_KEY!r} must be a non-empty list of strings")
            if completions and len(samples) != len(completions[0]):
                raise ConfigError(
                    f"{where}: {len(samples)} completions but line {line_nos[0]} has "
                    f"{len(completions[0])}; every line needs the same number"
                )
            has_greedy = GREEDY_KEY in record
            if rows and has_greedy != (len(greedy) == len(rows)):
                raise ConfigError(f"{where}: {GREEDY_KEY!r} must be given on every line or on none")
            if has_greedy:
                g = record.pop(GREEDY_KEY)
                if not isinstance(g, str):
                    raise ConfigError(f"{where}: {GREEDY_KEY!r} must be a string, got {type(g).__name__}")
                greedy.append(g)
            rows.append(record)
            line_nos.append(line_no)
            completions.append(samples)
    if not rows:
        raise ConfigError(f"{path}: no rows (the file is empty)")
    return rows, line_nos, completions, (greedy if greedy else None)


def score_completions_file(task: Task, path: str | Path, ks: Sequence[int] | None = None) -> dict[str, float]:
    """Score and summarise every completion of the file at ``path`` with ``task``'s verifier."""
    path = Path(path)
    if not path.is_file():
        raise MissingPathError(f"score_completions_file: {str(path)!r} does not exist")
    rows, line_nos, completions, greedy = _read_rows(path)
    for row, line_no in zip(rows, line_nos, strict=True):
        task.validate_row(row, where=f"{path} line {line_no}")
    m = len(completions[0])
    flat_completions = [c for samples in completions for c in samples]
    flat_rows = [row for row in rows for _ in range(m)]
    if greedy is not None:
        flat_completions += greedy
        flat_rows += rows
    scores = task.score_many(flat_completions, flat_rows)
    if len(scores) != len(flat_completions):
        raise RuntimeError(
            f"{type(task).__name__}.score_many returned {len(scores)} scores for {len(flat_completions)} completions"
        )
    n_sampled = len(rows) * m
    per_prompt = [scores[p * m : (p + 1) * m] for p in range(len(rows))]
    greedy_scores = scores[n_sampled:] if greedy is not None else None
    return summarize(per_prompt, ks=ks, greedy=greedy_scores, majority=task.extracts_answers)


def write_completions_file(
    path: str | Path,
    rows: Sequence[dict[str, Any]],
    completions: Sequence[Sequence[str]],
    greedy: Sequence[str] | None = None,
    rewards: Sequence[Sequence[float]] | None = None,
    greedy_rewards: Sequence[float] | None = None,
) -> Path:
    """Write ``rows`` with their completions (greedy and rewards optional) as JSONL; the path."""
    if len(rows) != len(completions):
        raise ValueError(f"write_completions_file: {len(rows)} rows but {len(completions)} completion lists")
    if greedy is not None and len(greedy) != len(rows):
        raise ValueError(f"write_completions_file: {len(rows)} rows but {len(greedy)} greedy completions")
    if not rows:
        raise ValueError("write_completions_file: no rows to write")
    m = len(completions[0])
    lines = []
    for i, (row, samples) in enumerate(zip(rows, completions, strict=True)):
        if len(samples) != m or m == 0:
            raise ValueError(
                f"write_completions_file: row {i} has {len(samples)} completions, row 0 has {m}; "
                "every row needs the same number M >= 1"
            )
        clash = [key for key in (COMPLETIONS_KEY, GREEDY_KEY) if key in row]
        if clash:
            raise ValueError(f"write_completions_file: row {i} already has column(s) {clash}")
        record = {**row, COMPLETIONS_KEY: list(samples)}
        if rewards is not None:
            record[REWARDS_KEY] = [float(r) for r in rewards[i]]
        if greedy is not None:
            record[GREEDY_KEY] = greedy[i]
            if greedy_rewards is not None:
                record[GREEDY_REWARD_KEY] = float(greedy_rewards[i])
        try:
            lines.append(strict_dumps(record, ensure_ascii=False))  # non-finite rewards as null
        except TypeError as e:
            raise TypeError(f"write_completions_file: row {i} is not JSON-serialisable: {e}") from e
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
