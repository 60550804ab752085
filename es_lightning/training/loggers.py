"""``metrics.jsonl``: one JSON object per logged step, appended and flushed as it is written."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from lightning.fabric.loggers import Logger
from lightning.fabric.utilities.rank_zero import rank_zero_only
from typing_extensions import override


class JSONLLogger(Logger):
    """Appends ``{"step": t, **metrics}`` lines to ``{root_dir}/metrics.jsonl``."""

    def __init__(self, root_dir: str | Path, filename: str = "metrics.jsonl") -> None:
        super().__init__()
        self._root_dir = Path(root_dir)
        self.path = self._root_dir / filename

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
        for key, value in metrics.items():
            value = float(value)
            record[key] = value if math.isfinite(value) else None
        with self.path.open("a") as f:
            f.write(json.dumps(record) + "\n")
            f.flush()

    @override
    def log_hyperparams(self, params: Any, *args: Any, **kwargs: Any) -> None:
        pass  # the resolved config is saved as config.yaml by the CLI


def log_hyperparams(loggers: list[Logger], hparams: dict[str, Any]) -> None:
    """Give every logger the run's resolved configuration once (loggers that cannot take
    hyperparameters, such as Fabric's own CSVLogger, are skipped)."""
    for logger in loggers:
        try:
            logger.log_hyperparams(hparams)
        except NotImplementedError:
            pass


def truncate_metrics(path: str | Path, after_step: int) -> int:
    """Drop the records of ``path`` logged after ``after_step`` (what a run wrote past its last
    checkpoint before it was killed; the resumed run logs those steps again). The file is
    replaced atomically. Returns how many records were dropped."""
    from es_lightning.checkpoint import atomic_write_text

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
