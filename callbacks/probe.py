"""The probe of :class:`~es_lightning.callbacks.PopulationDiversity`: its prompts, sampling seeds and
success rates, kept apart from the responses that produced the update's rewards.

Prompts (``split``), the first that exists under ``auto``:

1. ``validation``: the task's validation split (``task.load("validation")``), first ``num_prompts`` rows;
2. the training task's rows that training never reads: those past ``trainer.train_limit``, last
   ``num_prompts`` of them;
3. ``train`` (the tail): the last ``num_prompts`` training rows that are not in the probed update's
   own mini-batch (so the set can differ by a few rows from one probe to the next).

Sampling seeds: member i and copy i of the σ = 0 baseline draw with the same seed, derived from
(``seed``, update) like the strategy's member sampling seeds and shared by all members when the
strategy's ``member_sampling_seeds`` is ``common``; so identical members reproduce the copies
exactly under either mode.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from es_lightning.errors import ConfigError
from es_lightning.es.noise import seed_schedule
from es_lightning.evaluation.summary import is_correct
from es_lightning.training.batches import batch_indices

if TYPE_CHECKING:
    from es_lightning.module import ReasoningModule
    from es_lightning.rollout.base import RolloutOutput
    from es_lightning.tasks.base import Task

PROBE_SALT = 0x9E3779B9
"""Mixed into the callback's seed so probe sampling never reuses the training's sampling seeds."""
SPLITS = ("auto", "validation", "train")


def probe_sampling_seeds(seed: int, update: int, population_size: int, mode: str) -> list[int]:
    """The N sampling seeds of the probe of ``update`` (< 2³¹); all equal when ``mode`` is ``common``."""
    if mode not in ("common", "independent"):
        raise ValueError(f"unknown member sampling seed mode {mode!r}; use 'common' or 'independent'")
    seeds = [s % (2**31) for s in seed_schedule(seed ^ PROBE_SALT, update, population_size)]
    return [seeds[0]] * population_size if mode == "common" else seeds


class ProbePrompts:
    """The probe's rows for each probed update (module docstring, ``split``).

    Args:
        task: the training task.
        split: ``auto``, ``validation`` or ``train``.
        num_prompts: how many rows.
        train_limit: the trainer's ``train_limit`` (rows past it are never trained on).
    """

    def __init__(self, task: Task, split: str, num_prompts: int, train_limit: int | None) -> None:
        if split not in SPLITS:
            raise ConfigError(f"PopulationDiversity: split must be one of {SPLITS}, got {split!r}")
        self.num_prompts = num_prompts
        self.fixed: list[dict[str, Any]] | None = None
        if split in ("auto", "validation"):
            try:
                rows = task.load("validation")
            except ValueError as err:  # no validation split (ConfigError is a ValueError)
                rows, why = [], str(err)
            else:
                why = f"{task.name}: the validation split is empty"
            if rows:
                self.fixed, self.source = rows[:num_prompts], "validation split"
                return
            if split == "validation":
                raise ConfigError(f"PopulationDiversity: split 'validation': {why}")
        rows = task.load("train")
        self.train = rows[:train_limit]
        unused = rows[len(self.train) :]
        if split == "auto" and unused:
            self.fixed, self.source = unused[-num_prompts:], "train rows past train_limit"
        elif len(self.train) < 2:
            raise ConfigError("PopulationDiversity: the training split has too few rows for a probe")
        else:
            self.source = "train tail outside the update's batch"

    def rows(self, batch_size: int, seed: int, position: int) -> list[dict[str, Any]]:
        """The probe rows of the update that reads training batch ``position`` (with ``seed``)."""
        if self.fixed is not None:
            return self.fixed
        batch = set(batch_indices(len(self.train), batch_size, seed, position))
        outside = [i for i in range(len(self.train) - 1, -1, -1) if i not in batch]
        if not outside:
            raise ConfigError(
                "PopulationDiversity: every training row is in the update's batch; no probe rows are left "
                "(give the task a validation split or lower trainer.train_limit)"
            )
        return [self.train[i] for i in sorted(outside[: self.num_prompts])]


def success_rates(
    module: ReasoningModule, rows: Sequence[dict[str, Any]], outputs: Sequence[RolloutOutput]
) -> np.ndarray:
    """Per prompt, the fraction of its responses the verifier counts correct, shape (P,)."""
    scores = module.score(list(rows), list(outputs))
    return np.array([np.mean([is_correct(s) for s in per]) if per else 0.0 for per in scores])
