"""Faults a recipe can inject into a real run (``callbacks: [{class_path: tests.training.faults...}]``)."""

from __future__ import annotations

import os
import signal

from lightning.fabric.loggers import TensorBoardLogger


class KillAfterUpdate:
    """SIGKILL the run right after update ``global_step`` is logged, before it is checkpointed (as a
    node lost mid-run): what a resumed run must drop and log again is then on disk. The TensorBoard
    files are flushed first so that they hold it too."""

    def __init__(self, global_step: int) -> None:
        self.global_step = global_step

    def on_train_batch_end(self, trainer, step, metrics) -> None:
        if trainer.global_step() == self.global_step:
            for logger in trainer.fabric.loggers:
                if isinstance(logger, TensorBoardLogger):
                    logger.experiment.flush()
            os.kill(os.getpid(), signal.SIGKILL)
