"""A real callback that ends a run early through ``trainer.should_stop`` (named by recipes as
``tests.training.early_stop.StopAfter``), recording what the run did afterwards."""

from __future__ import annotations

import json


class StopAfter:
    """Set ``trainer.should_stop`` once update ``updates`` is done (only on rank 0 when
    ``rank_zero_only``, as a callback deciding from rank 0's evaluation would); write
    ``stop_record.json`` into the run folder from ``on_checkpoint`` and ``on_fit_end``."""

    def __init__(self, updates: int, rank_zero_only: bool = False) -> None:
        self.updates, self.rank_zero_only = updates, rank_zero_only
        self.record: dict[str, list[int]] = {"checkpoints": [], "fit_end": []}

    def on_train_batch_end(self, trainer, step, metrics) -> None:
        if step >= self.updates and (trainer.fabric.global_rank == 0 or not self.rank_zero_only):
            trainer.should_stop = True

    def on_checkpoint(self, trainer, step, path) -> None:
        self.record["checkpoints"].append(step)

    def on_fit_end(self, trainer, results) -> None:
        self.record["fit_end"].append(trainer.step)
        if trainer.fabric.global_rank == 0:
            (trainer.output_dir / "stop_record.json").write_text(json.dumps(self.record))
