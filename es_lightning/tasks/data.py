"""Where a task's rows come from: a hub dataset, local jsonl/json/parquet/csv files, or a local folder.

``path`` takes what ``datasets.load_dataset`` takes, plus globs and lists of files. Loading checks
the input before anything expensive runs, naming a bad file or row by file and line.
"""

from __future__ import annotations

import csv
import glob
import json
import os
import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Any

from es_lightning.errors import ConfigError, MissingPathError

_LOCAL_FORMATS = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}
_POSITION = "__es_lightning_position__"
_GLOB = re.compile(r"[*?[]")

RowCheck = Callable[[dict[str, Any], str], None]
"""``check(row, where)``: raises when ``row`` is unusable; ``where`` names it (file and line)."""


@dataclass
class DataSource:
    """A dataset split, loaded with HF ``datasets``: from the hub, local files or a local folder."""

    path: str | list[str]
    """Hub dataset name (``openai/gsm8k``); a local ``.jsonl``/``.json``/``.parquet``/``.csv``
    file; a glob of such files (``data/*.jsonl``, ``shards/**/train-*.parquet``; read in sorted
    order as one split); a list of files or globs (read in the given order); or a local dataset
    folder (its splits found from file names such as ``train.jsonl``, as ``datasets.load_dataset``
    does). All files of one source must have the same format and columns. ``~`` and ``$VARS`` are
    expanded in local paths."""
    name: str | None = None
    """Hub configuration name (``main`` for GSM8K)."""
    split: str = "train"
    """Split to read from a hub dataset or a local folder (local files and globs are one split)."""
    column_map: dict[str, str] = field(default_factory=dict)
    """Renames ``{dataset_column: task_column}`` applied after loading."""
    limit: int | None = None
    """Keep only the first ``limit`` rows (after shuffling, if ``shuffle_seed`` is set; >= 1)."""
    shuffle_seed: int | None = None
    """Shuffle the rows with this seed before ``limit``."""

    def __post_init__(self) -> None:
        if isinstance(self.path, (list, tuple)):
            self.path = [os.fspath(p) for p in self.path]
            if not self.path:
                raise ConfigError(
                    "DataSource: path is an empty list; give files, globs or a hub dataset name"
                )
        else:
            self.path = os.fspath(self.path)
        if any(not p.strip() for p in self._items()):
            raise ConfigError("DataSource: path is empty; give a hub dataset name or a local file")
        if self.limit is not None and self.limit <= 0:
            raise ConfigError(f"DataSource {self.path!r}: limit must be positive, got {self.limit}")

    def _items(self) -> list[str]:
        return list(self.path) if isinstance(self.path, list) else [self.path]

    def local_files(self) -> list[Path] | None:
        """The local files this source reads, in order, or ``None`` for a hub dataset or folder."""
        if isinstance(self.path, str) and not _GLOB.search(self.path):
            single = _single_file(self.path)
            return None if single is None else [single]
        files: list[Path] = []
        for item in self._items():
            files.extend(_matching_files(item) if _GLOB.search(item) else [_listed_file(item)])
        seen: set[Path] = set()
        formats: dict[str, Path] = {}  # .jsonl and .json are one format (JSON)
        for file in files:
            if file.resolve() in seen:
                raise ConfigError(f"DataSource {self.describe()}: {str(file)!r} is named twice")
            seen.add(file.resolve())
            formats.setdefault(_LOCAL_FORMATS[file.suffix.lower()], file)
        if len(formats) > 1:
            found = ", ".join(f"{fmt} ({str(example)!r})" for fmt, example in formats.items())
            raise ConfigError(
                f"DataSource {self.describe()}: the files mix formats ({found}); one source reads one "
                "format: narrow the glob (e.g. data/*.jsonl) or give one source per format"
            )
        return files

    def local_folder(self) -> Path | None:
        """The local dataset folder this source names, or ``None``."""
        if not isinstance(self.path, str) or _GLOB.search(self.path):
            return None
        expanded = _expand(self.path)
        return expanded if expanded.is_dir() else None

    def describe(self) -> str:
        """How error messages name this source."""
        if isinstance(self.path, list):
            return repr([str(_expand(p)) for p in self.path])
        local = _expand(self.path)
        if _GLOB.search(self.path) or local.suffix.lower() in _LOCAL_FORMATS:
            return repr(str(local))
        if local.is_dir():
            return f"local dataset folder {str(local)!r} (split {self.split})"
        config = f"{self.name}, " if self.name else ""
        return f"hub dataset {self.path!r} ({config}split {self.split})"

    def load(self, validate: RowCheck | None = None) -> list[dict[str, Any]]:
        """The rows with ``column_map``, ``shuffle_seed`` and ``limit`` applied, each ``validate``-d."""
        files = self.local_files()
        lines = [precheck_local_file(f) for f in files] if files is not None else None
        ds = self._read(files)
        if len(ds) == 0:
            raise ConfigError(f"DataSource {self.describe()}: no rows (the dataset is empty)")
        if self.column_map:
            missing = [c for c in self.column_map if c not in ds.column_names]
            if missing:
                raise ConfigError(
                    f"DataSource {self.describe()}: column_map names {missing} not in the dataset's "
                    f"columns {ds.column_names}"
                )
            ds = ds.rename_columns(self.column_map)
        shuffled = self.shuffle_seed is not None
        if shuffled and validate is not None:  # keep each row's place in the files for the messages
            ds = ds.add_column(_POSITION, list(range(len(ds))))
        origin = _Origin.of(files, lines, len(ds)) if validate is not None else None
        if shuffled:
            ds = ds.shuffle(seed=self.shuffle_seed)
        if self.limit is not None:
            ds = ds.select(range(min(self.limit, len(ds))))
        rows = [dict(row) for row in ds]
        if validate is not None:
            for i, row in enumerate(rows):
                position = row.pop(_POSITION) if shuffled else i
                validate(row, origin.where(position) if origin else f"{self.describe()} row {position + 1}")
        return rows

    def _read(self, files: list[Path] | None) -> Any:
        import datasets

        if files is not None:
            data_files = [str(f) for f in files]
            try:
                return datasets.load_dataset(
                    _LOCAL_FORMATS[files[0].suffix.lower()],
                    data_files=data_files[0] if len(files) == 1 else data_files,
                    split="train",
                )
            except (datasets.exceptions.DatasetGenerationError, ValueError) as err:
                hint = f" (do all {len(files)} files have the same columns?)" if len(files) > 1 else ""
                raise ConfigError(
                    f"DataSource: cannot read {self.describe()}: {_root_message(err)}{hint}"
                ) from err
        folder = self.local_folder()
        if folder is not None:
            try:
                return datasets.load_dataset(str(folder), self.name, split=self.split)
            except (FileNotFoundError, ValueError, datasets.exceptions.DatasetGenerationError) as err:
                raise ConfigError(f"DataSource: {self.describe()}: {_root_message(err)}") from None
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


@dataclass(frozen=True)
class _Origin:
    """Which file and line (or row) each position of the loaded rows comes from."""

    files: list[Path]
    lines: list[list[int] | None]
    offsets: list[int] | None
    """First position of each file's rows (``None``: unknown, rows are then named by position)."""

    @classmethod
    def of(cls, files: list[Path] | None, lines: list[list[int] | None] | None, total: int) -> _Origin | None:
        if files is None or lines is None:
            return None
        if len(files) == 1:
            return cls(files, lines, [0])
        counts = [len(found) if found is not None else _count_rows(f) for f, found in zip(files, lines)]
        if any(c is None for c in counts) or sum(counts) != total:  # type: ignore[arg-type]
            return cls(files, lines, None)
        return cls(files, lines, [0, *accumulate(counts[:-1])])  # type: ignore[list-item]

    def where(self, position: int) -> str:
        if self.offsets is None:
            return f"row {position + 1} of the files {[str(f) for f in self.files]}"
        i = bisect_right(self.offsets, position) - 1
        local, name = position - self.offsets[i], repr(str(self.files[i]))
        found = self.lines[i]
        return f"{name} line {found[local]}" if found is not None else f"{name} row {local + 1}"


def _expand(path: str) -> Path:
    return Path(os.path.expandvars(os.path.expanduser(path)))


def _unreadable(path: Path, what: str = "") -> ConfigError:
    suffix = path.suffix or "suffix-less"
    return ConfigError(
        f"DataSource: {str(path)!r}{what} is a {suffix} file; local datasets must be "
        f"{', '.join(_LOCAL_FORMATS)} files"
    )


def _single_file(path: str) -> Path | None:
    """The local file ``path`` names, or ``None`` for a hub dataset or a local dataset folder."""
    expanded = _expand(path)
    if expanded.suffix.lower() in _LOCAL_FORMATS:
        if not expanded.is_file():
            raise MissingPathError(f"DataSource: local dataset file {str(expanded)!r} does not exist")
        return expanded
    if expanded.is_file():
        raise _unreadable(expanded)
    if not expanded.exists() and (path.startswith((".", "/", "~", "$")) or path.count("/") > 1):
        raise MissingPathError(f"DataSource: local dataset {str(expanded)!r} does not exist")
    return None


def _listed_file(path: str) -> Path:
    """A file named in a list of files."""
    expanded = _expand(path)
    if expanded.is_dir():
        raise ConfigError(
            f"DataSource: {str(expanded)!r} in a list of files is a folder; list files or globs "
            "(a dataset folder is given alone as `path`)"
        )
    if not expanded.is_file():
        raise MissingPathError(f"DataSource: local dataset file {str(expanded)!r} does not exist")
    if expanded.suffix.lower() not in _LOCAL_FORMATS:
        raise _unreadable(expanded)
    return expanded


def _matching_files(pattern: str) -> list[Path]:
    """The files a glob matches (``**`` spans folders), sorted by path."""
    expanded = os.path.expandvars(os.path.expanduser(pattern))
    files = sorted(Path(p) for p in glob.glob(expanded, recursive=True) if Path(p).is_file())
    if not files:
        where = "" if os.path.isabs(expanded) else f" (relative to {os.getcwd()})"
        raise MissingPathError(f"DataSource: no file matches the glob {expanded!r}{where}")
    for file in files:
        if file.suffix.lower() not in _LOCAL_FORMATS:
            raise _unreadable(file, f" (matched by {expanded!r})")
    return files


def _count_rows(path: Path) -> int | None:
    """The rows ``datasets`` reads from a non-JSON-lines file, or ``None`` when that is not known."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.ParquetFile(path).metadata.num_rows
    if suffix == ".csv":
        with path.open(newline="", encoding="utf-8", errors="replace") as handle:
            records = sum(1 for record in csv.reader(handle) if record)
        return max(records - 1, 0)  # the header
    try:
        document = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except json.JSONDecodeError:
        return None
    return len(document) if isinstance(document, list) else None


def precheck_local_file(path: Path) -> list[int] | None:
    """Cheap checks of a local file before ``datasets`` reads it; each JSON line's number, or ``None``."""
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
    """The message of the innermost exception ``error`` was raised from."""
    while error.__cause__ is not None:
        error = error.__cause__
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
