"""What a reward function gets from the run besides the data, as TRL's trainers give it:
``trainer_state``, ``log_metric`` (logged as ``train/<name>``) and ``log_extra`` (in
``samples.jsonl``), set by the trainer with :func:`reward_context`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from es_lightning.tasks.reward_calls import RewardFunctionError, describe, where

TRL_ARGUMENTS = ("prompts", "completions", "completion_ids", "trainer_state", "log_extra", "log_metric")
"""The keyword arguments TRL gives every reward function besides the dataset's columns."""


@dataclass
class TrainerState:
    """The run's progress as a reward function sees it (transformers' ``TrainerState`` fields)."""

    global_step: int = 0
    """Updates finished so far (a pipeline stage counts the stages before it, as its loggers do)."""
    max_steps: int = 0
    """The update at which this run ends, on the same axis as ``global_step``."""
    step: int = 0
    """Updates finished so far in this run (a pipeline stage: in this stage)."""
    epoch: float = 0.0
    """Passes over the training rows so far (updates × batch size / rows)."""
    num_train_epochs: float = 0.0
    """Passes over the training rows when the run ends."""
    train_batch_size: int = 0
    """Prompts per update."""
    is_world_process_zero: bool = True
    is_local_process_zero: bool = True


@dataclass
class MetricLog:
    """Scalars reward functions logged with ``log_metric`` since the last :meth:`drain`."""

    values: dict[str, list[float]] = field(default_factory=dict)

    def add(self, name: str, value: float) -> None:
        self.values.setdefault(name, []).append(value)

    def drain(self) -> dict[str, float]:
        """The mean of each metric's values, in name order; the log is empty afterwards."""
        means = {name: sum(v) / len(v) for name, v in sorted(self.values.items()) if v}
        self.values.clear()
        return means


@dataclass(frozen=True)
class RewardContext:
    state: TrainerState
    log: MetricLog | None
    """Where ``log_metric`` values go; ``None``: they are dropped."""


_CURRENT: ContextVar[RewardContext | None] = ContextVar("es_lightning_reward_context", default=None)


def current_reward_context() -> RewardContext:
    """The state and metric log reward functions get now (outside a run: step 0, values dropped)."""
    return _CURRENT.get() or RewardContext(TrainerState(), None)


@contextmanager
def reward_context(state: TrainerState, log: MetricLog | None = None) -> Iterator[RewardContext]:
    """Reward functions called inside the block get ``state`` and log their metrics into ``log``."""
    context = RewardContext(state, log)
    token = _CURRENT.set(context)
    try:
        yield context
    finally:
        _CURRENT.reset(token)


def check_metric(name: object, value: object) -> str | None:
    """Why ``log_metric(name, value)`` cannot be logged (``None``: it can)."""
    if not isinstance(name, str) or not name.strip() or name.startswith("/"):
        return f"log_metric takes a metric name (a non-empty string), got {name!r}"
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return f"log_metric({name!r}, ...) takes a number, got {type(value).__name__} {value!r:.60}"
    if not math.isfinite(number):
        return f"log_metric({name!r}, {number}) takes a finite number"
    return None


def trl_arguments(
    func: Callable,
    context: RewardContext,
    completion_ids: Sequence[Sequence[int]] | None,
    logged: dict[str, list[Any]],
    count: int,
) -> dict[str, Any]:
    """TRL's further arguments for one call of ``func`` on ``count`` completions."""

    def log_metric(name: str, value: float) -> None:
        problem = check_metric(name, value)
        if problem is not None:
            raise RewardFunctionError(f"{describe(func)} ({where(func)}): {problem}")
        if context.log is not None:
            context.log.add(name, float(value))

    def log_extra(column: str, values: Sequence[Any]) -> None:
        if not isinstance(column, str) or not column:
            raise RewardFunctionError(
                f"{describe(func)} ({where(func)}): log_extra takes a column name (a non-empty "
                f"string), got {column!r}"
            )
        values = list(values)
        if len(values) != count:
            raise RewardFunctionError(
                f"{describe(func)} ({where(func)}): log_extra({column!r}, ...) got {len(values)} "
                f"values for {count} completions (one per completion)"
            )
        logged[column] = values

    given: dict[str, Any] = {"trainer_state": context.state, "log_extra": log_extra, "log_metric": log_metric}
    if completion_ids is not None:
        given["completion_ids"] = [list(ids) for ids in completion_ids]
    return given
