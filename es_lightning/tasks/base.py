"""The task contract: a dataset, a prompt for each row and a verifier for each completion::

    score = task.score(completion, row)      # Score(reward in [0, 1], answer for majority vote)

``reward_fn(completions, **columns)`` is the same verifier in TRL's reward-function signature.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from es_lightning.errors import ConfigError
from es_lightning.init_args import RecordsInit
from es_lightning.tasks.data import DataSource
from es_lightning.tasks.rows_source import RowsSource, as_source

SPLITS = ("train", "validation", "test")
"""The splits every task knows: train on ``train``, select settings on ``validation``, report
``test``."""


def check_split(task: str, split: str) -> None:
    """Refuse a split name that is none of :data:`SPLITS` (ConfigError naming ``task``)."""
    if split not in SPLITS:
        raise ConfigError(f"{task}: unknown split {split!r}; use 'train', 'validation' or 'test'")


@dataclass(frozen=True)
class Score:
    """What a verifier says about one completion."""

    reward: float
    """Reward in [0, 1]; 1 means correct."""
    answer: str | None
    """The normalised final answer extracted from the completion (``None`` when none was found);
    used by majority vote, so equal answers must compare equal as strings."""
    extra: dict[str, float] = field(default_factory=dict)
    """Further per-completion metrics a task wants logged (e.g. HotpotQA's token F1)."""
    logged: dict[str, Any] = field(default_factory=dict)
    """Values a reward function logged for this completion with TRL's ``log_extra`` (shown beside
    it in the logged samples)."""


class Task(RecordsInit, ABC):
    """A verifiable reasoning task.

    Rows come from the ``train``/``validation``/``test`` data sources (:data:`SPLITS`); settings
    are selected on the validation split, the test split is for the final numbers only.

    Args:
        train: where the training rows come from (``None``: nowhere, unless the task's family
            gives it a default); from Python also a ``datasets.Dataset`` or ``IterableDataset``, a
            list of row dicts or a path (:mod:`es_lightning.tasks.rows_source`), as for
            ``test`` and ``validation``.
        test: where the evaluation rows come from (``None`` as for ``train``).
        system_prompt: optional system message placed before the user message.
        prompt_template: ``str.format`` template for the user message; the fields are the row's
            columns plus ``question`` as built by :meth:`question`.
        validation: where the validation rows come from (``None`` as for ``train``); a source must
            hold no row of the train or test split (not checked for a plain task).
    """

    name: str = "task"
    """Registered name; metric names use it (``eval/{name}/pass@{k}``)."""
    default_template: str = "{question}"
    extracts_answers: ClassVar[bool] = True
    """Whether the verifier extracts a final answer (:attr:`Score.answer`) to majority-vote on;
    ``False`` (e.g. user reward functions, program tests) leaves ``maj@k`` out of evaluations."""

    def __init__(
        self,
        train: DataSource | None = None,
        test: DataSource | None = None,
        system_prompt: str | None = None,
        prompt_template: str | None = None,
        validation: DataSource | None = None,
    ) -> None:
        self.train = as_source(train, f"{self.name}: train")
        self.validation = as_source(validation, f"{self.name}: validation")
        self.test = as_source(test, f"{self.name}: test")
        self.system_prompt = system_prompt
        self.prompt_template = prompt_template or self.default_template

    # -- data ---------------------------------------------------------------------------------
    def source(self, split: str) -> DataSource | RowsSource | None:
        """The data source of ``split`` (one of :data:`SPLITS`), ``None`` when none is set."""
        check_split(self.name, split)
        return {"train": self.train, "validation": self.validation, "test": self.test}[split]

    def load(self, split: str = "train") -> list[dict[str, Any]]:
        """Rows of ``split`` with the column mapping applied, each checked by :meth:`validate_row`."""
        source = self.source(split)
        if source is None:
            raise ConfigError(
                f"{self.name}: no {split!r} data source configured (set `{split}:` in the task)"
            )
        return source.load(validate=self.validate_row)

    required_columns: tuple[str, ...] = ()
    """Columns every row must have (and not null) after the column mapping."""
    column_types: ClassVar[dict[str, type | tuple[type, ...]]] = {}
    """Basic Python types some columns must have (``{"answer": str}``), checked on every row."""

    def validate_row(self, row: dict[str, Any], where: str = "row") -> None:
        """Check one row before any work is done with it; ``where`` names it in the ConfigError."""
        missing = [c for c in self.required_columns if row.get(c) is None]
        if missing:
            absent = [c for c in missing if c not in row]
            null = [c for c in missing if c in row]
            parts = [f"lacks column(s) {absent}"] if absent else []
            if null:
                parts.append(f"lacks a value for column(s) {null} (missing or null)")
            raise ConfigError(
                f"{self.name}: {where} {' and '.join(parts)}; it has {sorted(k for k, v in row.items() if v is not None)}. "
                "Map the dataset's names with `column_map` in the data source."
            )
        for column, expected in self.column_types.items():
            value = row.get(column)
            if value is not None and not isinstance(value, expected):
                names = " or ".join(
                    t.__name__ for t in (expected if isinstance(expected, tuple) else (expected,))
                )
                raise ConfigError(
                    f"{self.name}: {where} column {column!r} must be a {names}, got "
                    f"{type(value).__name__} {str(value)[:80]!r}"
                )

    # -- prompts ------------------------------------------------------------------------------
    @abstractmethod
    def question(self, row: dict[str, Any]) -> str:
        """The problem statement of ``row`` as plain text."""

    def prompt(self, row: dict[str, Any]) -> str:
        """The user message for ``row`` (the chat template, if any, is applied by the module)."""
        return self.prompt_template.format(**{**row, "question": self.question(row)})

    def chat_messages(self, row: dict[str, Any]) -> list[dict[str, str]] | None:
        """The chat messages ``row`` gives as its prompt, or ``None`` for one user message."""
        return None

    # -- verification -------------------------------------------------------------------------
    @abstractmethod
    def score(self, completion: str, row: dict[str, Any]) -> Score:
        """Verify one completion for ``row``."""

    def reward_fn(
        self, completions: Sequence[Any], prompts: Sequence[Any] | None = None, **columns: Any
    ) -> list[float]:
        """Rewards in TRL's reward-function signature (keywords not aligned with completions ignored)."""
        n = len(completions)
        texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
        aligned = {k: v for k, v in columns.items() if isinstance(v, (list, tuple)) and len(v) == n}
        rows = [{k: v[i] for k, v in aligned.items()} for i in range(n)]
        return [score.reward for score in self.score_many(texts, rows)]

    def score_many(self, completions: Sequence[str], rows: Sequence[dict[str, Any]]) -> list[Score]:
        """Verify many completions (one row each); tasks that run code override it to batch."""
        if len(completions) != len(rows):
            raise ValueError(f"{self.name}: {len(completions)} completions for {len(rows)} rows")
        return [self.score(c, r) for c, r in zip(completions, rows)]
