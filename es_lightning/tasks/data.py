"""Where a task's rows come from: a hub dataset or a local jsonl/json/parquet/csv file.

Loading checks the input whole before anything expensive runs: a local file must exist and not be
empty, every line of a ``.jsonl`` file must be a JSON object (a bad line is named by number, which
``datasets`` does not do), and when a row check is given (a task's ``validate_row``) every row is
checked, the error naming the file and line (JSON lines) or row (other formats, 1-based).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from es_lightning.errors import ConfigError, MissingPathError

_LOCAL_FORMATS = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}
_POSITION = "__es_lightning_position__"

RowCheck = Callable[[dict[str, Any], str], None]
"""``check(row, where)``: raises when ``row`` is unusable; ``where`` names it (file and line)."""


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
    """Keep only the first ``limit`` rows (after shuffling, if ``shuffle_seed`` is set; >= 1)."""
    shuffle_seed: int | None = None
    """Shuffle the rows with this seed before ``limit``."""

    def __post_init__(self) -> None:
        if not str(self.path).strip():
            raise ConfigError("DataSource: path is empty; give a hub dataset name or a local file")
        if self.limit is not None and self.limit <= 0:
            raise ConfigError(f"DataSource {self.path!r}: limit must be positive, got {self.limit}")

    def resolved_path(self) -> Path | None:
        """The local file this source names, or ``None`` for a hub dataset (or a local dataset folder).

        Raises:
            MissingPathError: a local file (known suffix, or a path-like name) that does not exist.
            ConfigError: an existing file of a format that cannot be read.
        """
        expanded = Path(os.path.expandvars(os.path.expanduser(self.path)))
        suffix = expanded.suffix.lower()
        if suffix in _LOCAL_FORMATS:
            if not expanded.is_file():
                raise MissingPathError(f"DataSource: local dataset file {str(expanded)!r} does not exist")
            return expanded
        if expanded.is_file():
            raise ConfigError(
                f"DataSource: {str(expanded)!r} is a {suffix or 'suffix-less'} file; local datasets must be "
                f"{', '.join(_LOCAL_FORMATS)} files"
            )
        if not expanded.exists() and (self.path.startswith((".", "/", "~", "$")) or self.path.count("/") > 1):
            raise MissingPathError(f"DataSource: local dataset {str(expanded)!r} does not exist")
        return None

    def describe(self) -> str:
        """How error messages name this source."""
        local = Path(os.path.expandvars(os.path.expanduser(self.path)))
        if local.suffix.lower() in _LOCAL_FORMATS:
            return repr(str(local))
        config = f"{self.name}, " if self.name else ""
        return f"hub dataset {self.path!r} ({config}split {self.split})"

    def load(self, validate: RowCheck | None = None) -> list[dict[str, Any]]:
        """The rows, with ``column_map``, ``shuffle_seed`` and ``limit`` applied; each kept row is
        passed to ``validate(row, where)`` when given.

        Raises:
            MissingPathError: the local file does not exist.
            ConfigError: the file is empty or malformed (naming the line), the hub dataset cannot be
                loaded, ``column_map`` names a column the data lacks, or ``validate`` refuses a row.
        """
        local = self.resolved_path()
        lines = precheck_local_file(local) if local is not None else None
        ds = self._read(local)
        if len(ds) == 0:
            raise ConfigError(f"DataSource {self.describe()}: no rows (the dataset is empty)")
        if self.column_map:
            missing = [c for c in self.column_map if c not in ds.column_names]
            if missing:
                raise ConfigError(
                    f"DataSource {self.path!r}: column_map names {missing} not in the dataset's columns {ds.column_names}"
                )
            ds = ds.rename_columns(self.column_map)
        shuffled = self.shuffle_seed is not None
        if shuffled and validate is not None:  # keep each row's place in the file for the messages
            ds = ds.add_column(_POSITION, list(range(len(ds))))
        if shuffled:
            ds = ds.shuffle(seed=self.shuffle_seed)
        if self.limit is not None:
            ds = ds.select(range(min(self.limit, len(ds))))
        rows = [dict(row) for row in ds]
        if validate is not None:
            for i, row in enumerate(rows):
                position = row.pop(_POSITION) if shuffled else i
                validate(row, self._where(position, lines))
        return rows

    def _where(self, position: int, lines: list[int] | None) -> str:
        if lines is not None:
            return f"{self.describe()} line {lines[position]}"
        return f"{self.describe()} row {position + 1}"

    def _read(self, local: Path | None) -> Any:
        import datasets

        if local is not None:
            try:
                return datasets.load_dataset(
                    _LOCAL_FORMATS[local.suffix.lower()], data_files=str(local), split="train"
                )
            except (datasets.exceptions.DatasetGenerationError, ValueError) as err:
                raise ConfigError(f"DataSource: cannot read {str(local)!r}: {_root_message(err)}") from err
        try:
            return datasets.load_dataset(self.path, self.name, split=self.split)
        except (ConnectionError, FileNotFoundError) as err:
            cache = datasets.config.HF_DATASETS_CACHE
            raise ConfigError(
                f"DataSource: {self.describe()} cannot be loaded ({_root_message(err)}): it is not in the "
                f"local datasets cache ({cache}) or the hub cannot be reached. Load it once where there "
                "is network, or give a local .jsonl/.parquet file as `path` (with no network, "
                "HF_HUB_OFFLINE=1 skips the download retries)"
            ) from None
        except ValueError as err:  # an unknown configuration or split
            raise ConfigError(f"DataSource: {self.describe()}: {_root_message(err)}") from None


def precheck_local_file(path: Path) -> list[int] | None:
    """Cheap checks of a local data file before ``datasets`` reads it: not empty, and for JSON
    lines every non-blank line a JSON object. Returns the line number of each row (JSON lines),
    else ``None`` (rows are then named by their 1-based index).

    Raises:
        ConfigError: the file is empty, or a line is not a JSON object (naming file and line).
    """
    suffix = path.suffix.lower()
    if path.stat().st_size == 0:
        raise ConfigError(f"DataSource: {str(path)!r} is empty (no rows)")
    if suffix not in (".jsonl", ".json"):
        return None
    text = path.read_text(encoding="utf-8", errors="replace")
    if suffix == ".json":
        try:
            document = json.loads(text)
        except json.JSONDecodeError as err:
            if "\n" not in text.strip():
                raise ConfigError(f"DataSource: {str(path)!r}: invalid JSON ({err})") from None
        else:
            if isinstance(document, list):
                for i, item in enumerate(document):
                    if not isinstance(item, dict):
                        raise ConfigError(
                            f"DataSource: {str(path)!r} row {i + 1}: expected a JSON object, "
                            f"got {type(item).__name__}"
                        )
                if not document:
                    raise ConfigError(f"DataSource: {str(path)!r} holds an empty list (no rows)")
            return None
    lines = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise ConfigError(
                f"DataSource: {str(path)!r} line {number}: invalid JSON ({err.msg} at column {err.colno})"
            ) from None
        if not isinstance(record, dict):
            raise ConfigError(
                f"DataSource: {str(path)!r} line {number}: expected a JSON object, got {type(record).__name__}"
            )
        lines.append(number)
    if not lines:
        raise ConfigError(f"DataSource: {str(path)!r} has no rows (only blank lines)")
    return lines


def _root_message(error: BaseException) -> str:
    """The message of the innermost exception ``error`` was raised from (``datasets`` wraps the
    parser's error in a generic one)."""
    while error.__cause__ is not None:
        error = error.__cause__
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
