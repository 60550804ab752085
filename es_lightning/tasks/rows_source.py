"""A split given as data in memory, from Python: a ``datasets.Dataset`` or ``IterableDataset``, a
list of row dicts, or a path (:func:`as_source`); an ``IterableDataset`` is read to its end."""

from __future__ import annotations

import os
from typing import Any

from es_lightning.errors import ConfigError
from es_lightning.tasks.data import DataSource, RowCheck


class RowsSource:
    """Rows held in memory (a ``datasets`` dataset or a list of dicts), loaded like a data source."""

    def __init__(self, data: Any, what: str = "data") -> None:
        self.data, self.what = data, what

    def describe(self) -> str:
        """How error messages and ``config.yaml`` name this source."""
        kind = type(self.data).__name__
        columns = getattr(self.data, "column_names", None)
        rows = len(self.data) if hasattr(self.data, "__len__") else None
        size = f"{rows} rows" if rows is not None else "rows read to the end"
        return f"a {kind} in memory ({size}{f', columns {columns}' if columns else ''})"

    def load(self, validate: RowCheck | None = None) -> list[dict[str, Any]]:
        """The rows as plain dicts, each passed to ``validate(row, where)`` when given."""
        data = self.data
        if hasattr(data, "with_format"):  # a datasets dataset: plain Python values, not tensors
            data = data.with_format(None)
        rows = []
        for i, row in enumerate(data):
            if not isinstance(row, dict):
                raise ConfigError(
                    f"{self.what}: row {i + 1} of {self.describe()} is a {type(row).__name__}, not a "
                    "mapping of column names to values"
                )
            rows.append(dict(row))
        if not rows:
            raise ConfigError(f"{self.what}: {self.describe()} has no rows")
        if validate is not None:
            for i, row in enumerate(rows):
                validate(row, f"row {i + 1} of {self.describe()}")
        return rows


def as_source(value: Any, what: str) -> DataSource | RowsSource | None:
    """``value`` as a split's source (ConfigError for anything that is none)."""
    if value is None or isinstance(value, (DataSource, RowsSource)):
        return value
    if isinstance(value, (str, os.PathLike)):
        return DataSource(path=os.fspath(value))
    kind = type(value).__name__
    if kind in ("DatasetDict", "IterableDatasetDict"):
        splits = ", ".join(repr(k) for k in value)
        raise ConfigError(
            f"{what}: got a {kind} of the splits {splits}; give one split, e.g. dataset['train']"
        )
    if kind in ("Dataset", "IterableDataset") or isinstance(value, (list, tuple)):
        return RowsSource(value, what)  # rows checked one by one when loaded
    raise ConfigError(
        f"{what}: got a {kind}; give a DataSource, a path, a datasets.Dataset or IterableDataset, or a "
        "list of row dicts"
    )
