"""The trainer's side of TRL's reward call: ``trainer_state`` kept at the run's progress, and the
``log_metric`` values of each update averaged and logged as ``train/<name>``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from es_lightning.errors import ConfigError
from es_lightning.tasks.reward_context import MetricLog, TrainerState, reward_context
from es_lightning.training.config import TrainerConfig


class RewardProgress:
    """The run's :class:`TrainerState` and the per-update metric logs of its reward functions."""

    def __init__(
        self, fabric: Any, config: TrainerConfig, n_rows: int, max_steps: int, step_offset: int | None
    ) -> None:
        self.fabric, self.config, self.n_rows = fabric, config, max(n_rows, 1)
        self.max_steps, self.offset = max_steps, step_offset or 0
        self.state = TrainerState(
            max_steps=self.offset + max_steps,
            train_batch_size=config.batch_size,
            num_train_epochs=self._epochs(max_steps),
            is_world_process_zero=bool(fabric.is_global_zero),
            is_local_process_zero=fabric.local_rank == 0,
        )

    def _epochs(self, step: int) -> float:
        return (self.config.data_offset + step) * self.config.batch_size / self.n_rows

    def at(self, step: int) -> TrainerState:
        """The state after ``step`` updates of this run (the state object is updated in place)."""
        self.state.step, self.state.global_step = step, self.offset + step
        self.state.epoch = self._epochs(step)
        return self.state

    @contextmanager
    def update(self, step: int) -> Iterator[MetricLog]:
        """The block of update ``step``: reward functions log their metrics into the yielded log."""
        log = MetricLog()
        with reward_context(self.at(step), log):
            yield log

    def logged(self, log: MetricLog, ours: dict[str, float]) -> dict[str, float]:
        """``train/<name>``: each metric's mean over calls, then ranks (call it on every rank)."""
        means = log.drain()
        if self.fabric.world_size > 1:
            import torch.distributed as dist

            gathered: list[dict[str, float] | None] = [None] * self.fabric.world_size
            dist.all_gather_object(gathered, means)
            names = sorted({name for rank in gathered if rank for name in rank})
            means = {
                name: sum(v) / len(v)
                for name in names
                if (v := [rank[name] for rank in gathered if rank and name in rank])
            }
        out = {f"train/{name}": value for name, value in means.items()}
        taken = sorted(set(out) & set(ours))
        if taken:
            raise ConfigError(
                f"log_metric: {', '.join(repr(k.removeprefix('train/')) for k in taken)} would replace "
                f"es-lightning's own {', '.join(taken)}; give the metric another name"
            )
        return out
