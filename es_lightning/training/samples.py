"""Text samples: every ``trainer.log_samples_every`` updates, a few prompts with a response and its
reward, into ``samples.jsonl`` and every logger that takes text."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lightning.fabric.loggers import CSVLogger, Logger, TensorBoardLogger

from es_lightning.checkpoint_manifest import atomic_write_text
from es_lightning.console import warn
from es_lightning.strategies.base import Sample
from es_lightning.training.loggers import truncate_metrics

SAMPLES_FILE = "samples.jsonl"
CSV_FILE = "samples.csv"
TAG = "samples"
COLUMNS = ["step", "member", "reward", "advantage", "rewards", "logged", "prompt", "completion"]


def log_samples(
    output_dir: str | Path,
    loggers: Sequence[Logger],
    samples: Sequence[Sample],
    step: int,
    step_offset: int | None = None,
) -> None:
    """Write ``samples`` of update ``step`` to ``samples.jsonl`` and to each logger (rank 0)."""
    if not samples:
        return
    global_step = None if step_offset is None else step + step_offset
    logged_at = step if global_step is None else global_step
    path = Path(output_dir) / SAMPLES_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    rows: list[list[Any]] = []
    with path.open("a", encoding="utf-8") as f:
        for sample in samples:
            values = {column: getattr(sample, column) for column in COLUMNS[1:]}  # member .. completion
            record = {"step": step, **({"global_step": global_step} if global_step is not None else {})}
            record.update(values, logged=_plain(sample.logged))
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
            rows.append([logged_at, *(_pairs(v) if isinstance(v, dict) else v for v in values.values())])
    for logger in loggers:
        _to_logger(logger, rows, logged_at)


def truncate_samples(
    output_dir: str | Path, loggers: Sequence[Logger], after_step: int, step_offset: int | None = None
) -> None:
    """Drop the samples written after update ``after_step`` (``samples.jsonl``, CSV loggers)."""
    truncate_metrics(Path(output_dir) / SAMPLES_FILE, after_step)
    logged_at = after_step + (step_offset or 0)
    for logger in loggers:
        if isinstance(logger, CSVLogger):
            path = Path(logger.log_dir) / CSV_FILE
            if not path.is_file():
                continue
            with path.open(newline="", encoding="utf-8") as f:
                rows = list(csv.DictReader(f))
            kept = [[row.get(c, "") for c in COLUMNS] for row in rows if int(row["step"]) <= logged_at]
            if len(kept) != len(rows):
                atomic_write_text(path, _csv_text(kept, header=True))


def markdown_table(rows: Sequence[Sequence[Any]]) -> str:
    """``rows`` (as :data:`COLUMNS`) as a markdown table: ``|`` escaped, line breaks as ``<br>``.

    >>> print(markdown_table([[1, 0, 1.0, -0.5, "exact=1", "", "2+2?", "4 | four\\nok"]]))
    | step | member | reward | advantage | rewards | logged | prompt | completion |
    |---|---|---|---|---|---|---|---|
    | 1 | 0 | 1.000 | -0.500 | exact=1 |  | 2+2? | 4 \\| four<br>ok |
    """

    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:.3f}"
        text = "" if value is None else str(value)
        return text.replace("|", "\\|").replace("\r\n", "\n").replace("\n", "<br>")

    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _pairs(values: dict[str, Any]) -> str:
    """``name=value`` pairs of ``values``, space-separated (numbers with up to 4 significant digits)."""
    return " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in values.items())


def _plain(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with anything JSON cannot hold as its text."""
    return {
        k: v if v is None or isinstance(v, (str, int, float, bool)) else str(v) for k, v in values.items()
    }


def _to_logger(logger: Logger, rows: list[list[Any]], step: int) -> None:
    if isinstance(logger, TensorBoardLogger):  # Lightning's TensorBoardLogger subclasses Fabric's
        logger.experiment.add_text(TAG, markdown_table(rows), global_step=step)
    elif isinstance(logger, CSVLogger):  # so does Lightning's CSVLogger: both have `log_dir`
        path = Path(logger.log_dir) / CSV_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        text = _csv_text(rows, header=not path.is_file())
        with path.open("a", newline="", encoding="utf-8") as f:
            f.write(text)
    elif _is_mlflow(logger):
        run_id = logger.run_id  # starts the run when it has not started yet
        logger.experiment.log_text(run_id, markdown_table(rows), f"{TAG}/step-{step:06d}.md")
    elif callable(getattr(logger, "log_text", None)):  # W&B: a wandb.Table per step
        try:
            logger.log_text(key=TAG, columns=COLUMNS, data=rows, step=step)
        except TypeError as e:  # a log_text of another signature: skip it, with a warning
            warn(f"{type(logger).__name__}.log_text does not take a table ({e}); no samples logged")


def _is_mlflow(logger: Logger) -> bool:
    try:
        from lightning.pytorch.loggers import MLFlowLogger
    except ImportError:  # pragma: no cover  (lightning.pytorch ships with lightning)
        return False
    return isinstance(logger, MLFlowLogger)


def _csv_text(rows: Sequence[Sequence[Any]], header: bool) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    if header:
        writer.writerow(COLUMNS)
    writer.writerows(rows)
    return buffer.getvalue()
