"""The two ways a task gets its rows: a dataset with default sources, or a seeded generator.

* :class:`DatasetTask` reads its rows from data sources (:class:`~es_lightning.tasks.data.DataSource`);
  a task names its usual dataset once, as the class attributes ``default_train``/``default_test``,
  and a ``train``/``test`` given to the constructor replaces them;
* :class:`GeneratedTask` makes its rows with a seeded generator (``n_train``, ``n_test``,
  ``seed``); a split whose ``train``/``test`` source is given is read from it instead.

Each family declares ``train``/``test`` with its own meaning of ``None``, and
:class:`~es_lightning.tasks.base.Task` declares ``system_prompt``/``prompt_template``. A concrete
task lists only its own arguments and passes the rest on as ``**kwargs``, which jsonargparse
follows to build the task's ``--help`` and YAML schema::

    @register_task
    class Parity(GeneratedTask):
        name = "parity"

        def __init__(self, *, n_train: int = 100, n_test: int = 20, seed: int = 0, **kwargs: Any) -> None:
            super().__init__(n_train=n_train, n_test=n_test, seed=seed, **kwargs)

        def generate_split(self, split: str) -> list[dict[str, Any]]:
            rng = random.Random(f"parity-{self.seed}-{split}")
            return [{"n": rng.randint(0, 99)} for _ in range(self.n_train if split == "train" else self.n_test)]
"""

from __future__ import annotations

import copy
from abc import abstractmethod
from typing import Any, ClassVar

from es_lightning.errors import ConfigError
from es_lightning.tasks.base import Task
from es_lightning.tasks.data import DataSource


class DatasetTask(Task):
    """A task whose rows come from a dataset: a hub dataset by default, or any data source.

    Args:
        train: training rows; ``None`` uses the task's ``default_train`` (its usual training set,
            named in the task's description; some tasks have none).
        test: evaluation rows; ``None`` uses the task's ``default_test``.
        **kwargs: ``system_prompt`` and ``prompt_template`` of :class:`~es_lightning.tasks.base.Task`.
    """

    default_train: ClassVar[DataSource | None] = None
    """The training source when none is given (each instance gets its own copy)."""
    default_test: ClassVar[DataSource | None] = None
    """The evaluation source when none is given (each instance gets its own copy)."""

    def __init__(
        self, train: DataSource | None = None, test: DataSource | None = None, **kwargs: Any
    ) -> None:
        super().__init__(
            train=train if train is not None else copy.deepcopy(self.default_train),
            test=test if test is not None else copy.deepcopy(self.default_test),
            **kwargs,
        )


class GeneratedTask(Task):
    """A task whose rows a seeded generator makes, split by split.

    :meth:`load` reads a split from its data source when one is set (``train``/``test``, as for any
    :class:`~es_lightning.tasks.base.Task`) and otherwise returns :meth:`generate_split`, which a
    concrete task implements: ``n_train`` or ``n_test`` rows, the same for the same settings and
    ``seed``. Whether the generated splits may share a problem is the task's to say (and document).

    Args:
        train: training rows; ``None`` generates ``n_train`` rows.
        test: evaluation rows; ``None`` generates ``n_test`` rows.
        n_train: generated training rows (at least 0).
        n_test: generated test rows (at least 0).
        seed: generator seed.
        **kwargs: ``system_prompt`` and ``prompt_template`` of :class:`~es_lightning.tasks.base.Task`.

    Raises:
        ValueError: ``n_train`` or ``n_test`` is negative.
    """

    def __init__(
        self,
        *,
        train: DataSource | None = None,
        test: DataSource | None = None,
        n_train: int,
        n_test: int,
        seed: int = 0,
        **kwargs: Any,
    ) -> None:
        for arg, given in (("n_train", n_train), ("n_test", n_test)):
            if given < 0:
                raise ConfigError(f"{self.name}: {arg} must be at least 0, got {given}")
        super().__init__(train=train, test=test, **kwargs)
        self.n_train, self.n_test, self.seed = n_train, n_test, seed

    def load(self, split: str = "train") -> list[dict[str, Any]]:
        """Rows of ``split`` (``"train"`` or ``"test"``): from its data source when one is set,
        else :meth:`generate_split`."""
        if self.source(split) is not None:
            return super().load(split)
        return self.generate_split(split)

    @abstractmethod
    def generate_split(self, split: str) -> list[dict[str, Any]]:
        """The generated rows of ``split`` (``"train"`` or ``"test"``): ``n_train`` or ``n_test``
        rows, the same ones whenever the settings, ``seed`` and data sources are the same."""
