"""Where a task's rows come from: a hub dataset or a local jsonl/json/parquet file."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_LOCAL_FORMATS = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}


@dataclass
class DataSource:
    """A dataset split, loaded with HF ``datasets``."""

    path: str
    """Hub dataset name (``openai/gsm8k``) or a local ``.jsonl``/``.json``/``.parquet``/``.csv`` file.
    ``~`` and ``$VARS`` are expanded in local paths."""
    name: str | None = None
    """Hub configuration name (``main`` for GSM8K)."""
    split: str = "train"
    """Split to read (local files have a single ``train`` split)."""
    column_map: dict[str, str] = field(default_factory=dict)
    """Renames ``{dataset_column: task_column}`` applied after loading."""
    limit: int | None = None
    """Keep only the first ``limit`` rows (after shuffling, if ``shuffle_seed`` is set)."""
    shuffle_seed: int | None = None
    """Shuffle the rows with this seed before ``limit``."""

    def __post_init__(self) -> None:
        if self.limit is not None and self.limit <= 0:
            raise ValueError(f"DataSource {self.path!r}: limit must be positive, got {self.limit}")

    def resolved_path(self) -> Path | None:
        """The local file this source names, or ``None`` for a hub dataset."""
        expanded = Path(os.path.expandvars(os.path.expanduser(self.path)))
        if expanded.suffix.lower() in _LOCAL_FORMATS:
            if not expanded.is_file():
                raise FileNotFoundError(f"DataSource: local dataset file {str(expanded)!r} does not exist")
            return expanded
        return None

    def load(self) -> list[dict[str, Any]]:
        import datasets

        local = self.resolved_path()
        if local is not None:
            ds = datasets.load_dataset(
                _LOCAL_FORMATS[local.suffix.lower()], data_files=str(local), split="train"
            )
        else:
            ds = datasets.load_dataset(self.path, self.name, split=self.split)
        if self.column_map:
            missing = [c for c in self.column_map if c not in ds.column_names]
            if missing:
                raise ValueError(
                    f"DataSource {self.path!r}: column_map names {missing} not in the dataset's columns {ds.column_names}"
                )
            ds = ds.rename_columns(self.column_map)
        if self.shuffle_seed is not None:
            ds = ds.shuffle(seed=self.shuffle_seed)
        if self.limit is not None:
            ds = ds.select(range(min(self.limit, len(ds))))
        return [dict(row) for row in ds]
