"""The two ways a task gets its rows: a dataset with default sources (:class:`DatasetTask`), or a
seeded generator (:class:`GeneratedTask`). A concrete task lists only its own arguments and passes
the rest on as ``**kwargs``, which jsonargparse follows to build its ``--help``::

    @register_task
    class Parity(GeneratedTask):
        name = "parity"

        def __init__(self, *, n_train: int = 100, n_test: int = 20, seed: int = 0, **kwargs: Any) -> None:
            super().__init__(n_train=n_train, n_test=n_test, seed=seed, **kwargs)

        def generate_split(self, split: str) -> list[dict[str, Any]]:
            rng = random.Random(f"parity-{self.seed}-{split}")
            return [{"n": rng.randint(0, 99)} for _ in range(self.split_size(split))]
"""

from __future__ import annotations

import copy
import random
from abc import abstractmethod
from collections.abc import Callable, Hashable, Iterable
from typing import Any, ClassVar

from es_lightning.errors import ConfigError
from es_lightning.tasks.base import Task, check_split
from es_lightning.tasks.data import DataSource


def held_out(n_rows: int, size: int, seed: int) -> set[int]:
    """The positions of the ``size`` train rows held out as validation: a seeded shuffle's first."""
    if not 1 <= size < n_rows:
        raise ConfigError(
            f"a validation slice of {size} rows leaves no training rows of {n_rows}; lower "
            "validation_size/validation_fraction or give a `validation:` source"
        )
    order = list(range(n_rows))
    random.Random(f"validation-{seed}").shuffle(order)
    return set(order[:size])


class DatasetTask(Task):
    """A task whose rows come from a dataset: a hub dataset by default, or any data source.

    The validation split is the ``validation`` source when given (it must share no row with train
    or test); else, with ``validation_size`` or ``validation_fraction``, the rows :func:`held_out`
    picks from the train source's rows, train keeping the others; else none.

    Args:
        train: training rows; ``None`` uses the task's ``default_train`` (its usual training set,
            named in the task's description; some tasks have none).
        test: evaluation rows; ``None`` uses the task's ``default_test``.
        validation: validation rows (a named split of the dataset or a file); ``None``: the
            held-out slice below, or no validation split.
        validation_size: rows held out of train as the validation split (>= 1).
        validation_fraction: share of the train rows held out instead, in (0, 1); rounded, at
            least 1 row.
        validation_seed: seed of the held-out slice.
        **kwargs: ``system_prompt`` and ``prompt_template`` of :class:`~es_lightning.tasks.base.Task`.
    """

    default_train: ClassVar[DataSource | None] = None
    """The training source when none is given (each instance gets its own copy)."""
    default_test: ClassVar[DataSource | None] = None
    """The evaluation source when none is given (each instance gets its own copy)."""

    def __init__(
        self,
        train: DataSource | None = None,
        test: DataSource | None = None,
        validation: DataSource | None = None,
        validation_size: int | None = None,
        validation_fraction: float | None = None,
        validation_seed: int = 0,
        **kwargs: Any,
    ) -> None:
        choices = (validation, validation_size, validation_fraction)
        names = ("validation", "validation_size", "validation_fraction")
        given = [name for name, value in zip(names, choices) if value is not None]
        if len(given) > 1:
            raise ConfigError(
                f"{self.name}: give one of {' and '.join(given)} (each sets the validation split)"
            )
        if validation_size is not None and validation_size < 1:
            raise ConfigError(f"{self.name}: validation_size must be at least 1, got {validation_size}")
        if validation_fraction is not None and not 0 < validation_fraction < 1:
            raise ConfigError(
                f"{self.name}: validation_fraction must be in (0, 1), got {validation_fraction}"
            )
        super().__init__(
            train=train if train is not None else copy.deepcopy(self.default_train),
            test=test if test is not None else copy.deepcopy(self.default_test),
            validation=validation,
            **kwargs,
        )
        self.validation_size, self.validation_fraction = validation_size, validation_fraction
        self.validation_seed = validation_seed

    def holds_out_validation(self) -> bool:
        """Whether the validation split is a slice held out of the train rows."""
        return self.validation is None and (
            self.validation_size is not None or self.validation_fraction is not None
        )

    def load(self, split: str = "train") -> list[dict[str, Any]]:
        """Rows of ``split``; a held-out slice splits the train source's rows with validation."""
        check_split(self.name, split)
        if split == "test" or not self.holds_out_validation():
            if split == "validation" and self.validation is None:
                raise ConfigError(
                    f"{self.name}: no 'validation' data source configured (set `validation:` in the "
                    "task, or validation_size / validation_fraction to hold out train rows)"
                )
            return super().load(split)
        rows = super().load("train")
        size = self.validation_size
        if size is None:
            size = max(1, round(self.validation_fraction * len(rows)))  # type: ignore[operator]
        held = held_out(len(rows), size, self.validation_seed)
        return [row for i, row in enumerate(rows) if (i in held) == (split == "validation")]


class GeneratedTask(Task):
    """A task whose rows a seeded generator makes, split by split.

    A split with a data source is read from it; otherwise :meth:`generate_split` makes
    :meth:`split_size` rows, the same for the same settings. The built-in tasks keep the validation
    split apart from both others.

    Args:
        train: training rows; ``None`` generates ``n_train`` rows.
        test: evaluation rows; ``None`` generates ``n_test`` rows.
        n_train: generated training rows (at least 0).
        n_test: generated test rows (at least 0).
        seed: generator seed.
        validation: validation rows; ``None`` generates ``n_validation`` rows.
        n_validation: generated validation rows (at least 0).
        **kwargs: ``system_prompt`` and ``prompt_template`` of :class:`~es_lightning.tasks.base.Task`.
    """

    def __init__(
        self,
        *,
        train: DataSource | None = None,
        test: DataSource | None = None,
        n_train: int,
        n_test: int,
        seed: int = 0,
        validation: DataSource | None = None,
        n_validation: int = 0,
        **kwargs: Any,
    ) -> None:
        self.check_at_least(n_train=(n_train, 0), n_validation=(n_validation, 0), n_test=(n_test, 0))
        super().__init__(train=train, test=test, validation=validation, **kwargs)
        self.n_train, self.n_validation, self.n_test, self.seed = n_train, n_validation, n_test, seed

    def check_at_least(self, **bounds: tuple[float, float]) -> None:
        """Refuse the first ``arg=(given, low)`` with ``given < low`` (ConfigError naming ``arg``)."""
        for arg, (given, low) in bounds.items():
            if given < low:
                raise ConfigError(f"{self.name}: {arg} must be at least {low}, got {given}")

    def split_size(self, split: str) -> int:
        """``n_train``, ``n_validation`` or ``n_test`` for ``split``."""
        check_split(self.name, split)
        return {"train": self.n_train, "validation": self.n_validation, "test": self.n_test}[split]

    def load(self, split: str = "train") -> list[dict[str, Any]]:
        """Rows of ``split``: from its data source when set, else generated (:meth:`split_rows`)."""
        return self.split_rows(split)

    def split_rows(self, split: str) -> list[dict[str, Any]]:
        """What :meth:`load` returns; generators call this for splits they keep apart, so only
        a split's readers call :meth:`load` (a test checks tuning never reads test)."""
        if self.source(split) is not None:
            return super().load(split)
        return self.generate_split(split)

    @abstractmethod
    def generate_split(self, split: str) -> list[dict[str, Any]]:
        """The generated rows of ``split``: :meth:`split_size` rows, the same for the same settings."""

    def kept_apart(self, split: str, key: Callable[[dict[str, Any]], Hashable]) -> set[Any]:
        """The ``key`` of every row ``split`` must not repeat: none for test, the test rows' for
        validation, the test and validation rows' for train."""
        if split == "test":
            return set()
        keys = {key(row) for row in self.split_rows("test")}
        if split == "train" and (self.n_validation or self.validation):
            keys |= {key(row) for row in self.split_rows("validation")}
        return keys

    def draw_unique(
        self,
        n: int,
        draw: Callable[[], dict[str, Any] | None],
        key: Callable[[dict[str, Any]], Hashable],
        exclude: Iterable[Hashable] = (),
        settings: str = "",
    ) -> list[dict[str, Any]]:
        """The first ``n`` rows ``draw()`` makes whose ``key`` is new and not in ``exclude`` (a
        ``None`` row is skipped); ConfigError naming ``settings`` after ``100 * n + 1000`` draws."""
        rows: list[dict[str, Any]] = []
        seen = set(exclude)
        for _ in range(100 * n + 1000):
            if len(rows) == n:
                return rows
            row = draw()
            if row is not None and key(row) not in seen:
                seen.add(key(row))
                rows.append(row)
        if len(rows) == n:
            return rows
        raise ConfigError(
            f"{self.name}: found only {len(rows)} distinct problems of the {n} asked for with {settings}"
        )
