"""HeldOutPassAtK: Pass@K, Maj@K and greedy accuracy on a held-out suite during training.

Runs the trainer's own evaluation code (:meth:`Trainer.evaluate_sets`, the path of the before/after
evaluation, sharded across the ranks) on its own suite and settings, before the first update,
every ``every_n_updates`` updates and after the last; logs ``heldout/<task>/pass@k`` (plus
``heldout/average/…`` and the held-out average over several tasks) and writes
``{output_dir}/heldout/step-NNNNNN*.json``. It reads the tasks' ``test`` split unless told
``split: validation`` (what a run tuned on the validation split must use).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from es_lightning.errors import ConfigError
from es_lightning.evaluation.runner import EvalConfig
from es_lightning.tasks.base import Task
from es_lightning.training.callbacks import Callback

if TYPE_CHECKING:
    from es_lightning.training.trainer import Trainer


class HeldOutPassAtK(Callback):
    """Periodic Pass@K on held-out tasks (``heldout/<task>/…``).

    Args:
        tasks: tasks by metric name, or the name of an evaluation suite (``easy_heldout``, ...;
            see :mod:`es_lightning.evaluation.suites`).
        every_n_updates: evaluate after every this many updates.
        evaluation: samples, temperature, K values, prompt limit (default: ``EvalConfig(limit=100)``).
        split: the split of the tasks evaluated, ``test`` or ``validation`` (``None``: the
            evaluation's ``split``, by default ``test``); a run whose settings are being selected
            evaluates ``validation``.
    """

    def __init__(
        self,
        tasks: dict[str, Task] | str,
        every_n_updates: int = 10,
        evaluation: EvalConfig | None = None,
        split: str | None = None,
    ) -> None:
        from es_lightning.presets import resolve_eval_tasks

        if every_n_updates < 1:
            raise ConfigError(f"HeldOutPassAtK: every_n_updates must be >= 1, got {every_n_updates}")
        self.tasks = resolve_eval_tasks(tasks)
        if not self.tasks:
            raise ConfigError("HeldOutPassAtK: no tasks given")
        self.every_n_updates = every_n_updates
        self.evaluation = evaluation or EvalConfig(limit=100)
        if split is not None:
            self.evaluation = replace(self.evaluation, split=split)  # checked by EvalConfig
        self._sets: list[Any] = []
        self._done: set[int] = set()

    def on_fit_start(self, trainer: Trainer) -> None:
        # A new run or pipeline stage starts at step 0; a resumed run keeps its record of done steps.
        if trainer.step == 0:
            self._done = set()
        limit = self.evaluation.limit
        split = self.evaluation.split
        self._sets = [(name, task, task.load(split)[:limit]) for name, task in self.tasks.items()]
        self._evaluate(trainer)

    def on_train_batch_end(self, trainer: Trainer, step: int, metrics: dict[str, float]) -> None:
        if step % self.every_n_updates == 0:
            self._evaluate(trainer)

    def on_fit_end(self, trainer: Trainer, results: dict[str, Any]) -> None:
        self._evaluate(trainer)

    def _evaluate(self, trainer: Trainer) -> None:
        if trainer.step in self._done:
            return
        self._done.add(trainer.step)
        # every rank generates its share of the prompts; rank 0 gathers, writes and logs
        trainer.evaluate_sets(
            self._sets, f"step-{trainer.step:06d}", prefix="heldout", config=self.evaluation
        )
        trainer.fabric.barrier()

    def state_dict(self) -> dict[str, Any]:
        return {"done": sorted(self._done)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._done = {int(step) for step in state.get("done", [])}
