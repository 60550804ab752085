"""The run's own loggers: ``metrics.jsonl`` and the TensorBoard run; a pipeline stage's
``metrics.jsonl`` keeps its own update as ``step`` and the pipeline's as ``global_step``."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import yaml
from lightning.fabric.loggers import CSVLogger, Logger, TensorBoardLogger
from lightning.fabric.utilities.rank_zero import rank_zero_only
from typing_extensions import override


class JSONLLogger(Logger):
    """Appends ``{"step": t, **metrics}`` lines to ``{root_dir}/metrics.jsonl``.

    Args:
        root_dir: the run folder.
        filename: the file in it.
        step_offset: a pipeline stage's: the updates of the stages before it. Steps arrive on the
            pipeline's axis and are written as ``{"step": step - step_offset, "global_step": step}``;
            ``None``: written as they arrive.
    """

    def __init__(
        self, root_dir: str | Path, filename: str = "metrics.jsonl", step_offset: int | None = None
    ) -> None:
        super().__init__()
        self._root_dir = Path(root_dir)
        self.path = self._root_dir / filename
        self.step_offset = step_offset

    @property
    @override
    def name(self) -> str:
        return "jsonl"

    @property
    @override
    def version(self) -> str:
        return "0"

    @property
    @override
    def root_dir(self) -> str:
        return str(self._root_dir)

    @override
    @rank_zero_only
    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        self._root_dir.mkdir(parents=True, exist_ok=True)
        record: dict[str, Any] = {"step": step}
        if step is not None and self.step_offset is not None:
            record = {"step": step - self.step_offset, "global_step": step}
        for key, value in metrics.items():
            value = float(value)
            record[key] = value if math.isfinite(value) else None
        with self.path.open("a") as f:
            f.write(json.dumps(record) + "\n")
            f.flush()

    @override
    def log_hyperparams(self, params: Any, *args: Any, **kwargs: Any) -> None:
        pass  # the resolved config is saved as config.yaml by the CLI


class RunTensorBoardLogger(TensorBoardLogger):
    """Fabric's TensorBoard logger that fills TensorBoard's HPARAMS tab when the run ends.

    The configuration given to :meth:`log_hyperparams` is written on ``finalize("success")`` beside
    the last value of every ``eval/…`` metric (TensorBoard shows hyperparameters only with metrics).
    """

    FINAL_PREFIX = "eval/"
    """The metrics that go beside the hyperparameters."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._run_hparams: dict[str, Any] | None = None
        self._final: dict[str, float] = {}
        self._final_step: int | None = None
        self._writing_hparams = False

    @override
    def log_hyperparams(self, params: Any, metrics: Any = None, step: int | None = None) -> None:
        self._run_hparams = dict(params)
        super().log_hyperparams(params, metrics, step)

    @override
    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        if self._writing_hparams:  # the final values are already logged at their step: not twice
            return
        super().log_metrics(metrics, step)
        final = {k: float(v) for k, v in metrics.items() if k.startswith(self.FINAL_PREFIX)}
        if final:
            self._final.update(final)
            self._final_step = step

    @override
    def finalize(self, status: str) -> None:
        if status == "success" and self._run_hparams is not None and self._final:
            self._writing_hparams = True  # the hparams summary only; Fabric's would log the metrics again
            try:
                super().log_hyperparams(self._run_hparams, metrics=dict(self._final), step=self._final_step)
            finally:
                self._writing_hparams = False
        super().finalize(status)


def tensorboard_logger(folder: str | Path, purge_step: int = 0) -> TensorBoardLogger:
    """The run's TensorBoard files, each restarting at ``purge_step`` (a resume replaces steps)."""
    return RunTensorBoardLogger(
        folder, name="tensorboard", version="", default_hp_metric=False, purge_step=purge_step
    )


def log_hyperparams(loggers: list[Logger], hparams: dict[str, Any]) -> None:
    """Give every logger the run's resolved configuration once."""
    for logger in loggers:
        try:
            logger.log_hyperparams(hparams)
        except NotImplementedError:
            if isinstance(logger, CSVLogger):
                folder = Path(logger.log_dir)
                folder.mkdir(parents=True, exist_ok=True)
                plain = json.loads(json.dumps(hparams, default=str))  # paths, enums, ... as text
                (folder / "hparams.yaml").write_text(yaml.safe_dump(plain, sort_keys=False))


def truncate_metrics(path: str | Path, after_step: int) -> int:
    """Drop the records of ``path`` logged after ``after_step``; how many were dropped."""
    from es_lightning.checkpoint_manifest import atomic_write_text

    path = Path(path)
    if not path.is_file():
        return 0
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    kept = []
    for line in lines:
        try:
            step = json.loads(line).get("step")
        except json.JSONDecodeError:  # a line cut short by the kill
            continue
        if step is None or step <= after_step:
            kept.append(line)
    if len(kept) != len(lines):
        atomic_write_text(path, "".join(line + "\n" for line in kept))
    return len(lines) - len(kept)


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """The records of a ``metrics.jsonl`` file."""
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
