"""``echo``: repeat a digit string; a generated task whose reward a random tiny model can move::

    reward = w · (1/L) · Σ_{j<L} [a[j] is a digit] + (1 − w) · (1/L) · Σ_{j<L} [a[j] == digits[j]]

so rewards vary across an ES population even for a random model.
"""

from __future__ import annotations

import random
from typing import Any

from es_lightning.errors import ConfigError
from es_lightning.tasks.base import Score
from es_lightning.tasks.families import GeneratedTask
from es_lightning.tasks.registry import register_task


@register_task
class Echo(GeneratedTask):
    """Repeat a random digit string.

    Each split draws from its own seeded stream; the validation split shares no string with the
    others.

    Args:
        length: digits per generated problem.
        n_train: generated training rows.
        n_test: generated test rows.
        seed: generator seed.
        format_weight: w, the share of the reward for answering with digits at all.
        n_validation: generated validation rows.
        **kwargs: ``train`` (rows with a ``digits`` column), ``validation``, ``test``,
            ``system_prompt`` and ``prompt_template`` of
            :class:`~es_lightning.tasks.families.GeneratedTask`.
    """

    name = "echo"
    required_columns = ("digits",)
    default_template = "Repeat: {digits}\n"

    def __init__(
        self,
        *,
        length: int = 4,
        n_train: int = 256,
        n_test: int = 64,
        seed: int = 0,
        format_weight: float = 0.5,
        n_validation: int = 64,
        **kwargs: Any,
    ) -> None:
        if not 0 <= format_weight <= 1:
            raise ConfigError(f"echo: format_weight must be in [0, 1], got {format_weight}")
        if length < 1 or n_train < 1 or n_test < 1:
            raise ConfigError(
                f"echo: length, n_train and n_test must be >= 1, got {length}, {n_train}, {n_test}"
            )
        super().__init__(n_train=n_train, n_validation=n_validation, n_test=n_test, seed=seed, **kwargs)
        self.length, self.format_weight = length, format_weight

    def generate_split(self, split: str) -> list[dict[str, Any]]:
        skip: set[str] = set()
        if split == "validation":
            skip = {str(row["digits"]) for row in self.split_rows("test")}
        elif split == "train" and (self.n_validation or self.validation):
            skip = {str(row["digits"]) for row in self.split_rows("validation")}
        count = self.split_size(split)
        if count and len({s for s in skip if len(s) == self.length}) >= 10**self.length:
            others = "test" if split == "validation" else "validation"
            raise ConfigError(
                f"echo: the {others} split holds every {self.length}-digit string; no {split} row is "
                "left (raise length or lower n_test/n_validation)"
            )
        rng = random.Random(f"echo-{self.seed}-{split}")
        rows: list[dict[str, Any]] = []
        while len(rows) < count:
            digits = "".join(rng.choice("0123456789") for _ in range(self.length))
            if digits not in skip:
                rows.append({"digits": digits})
        return rows

    def question(self, row: dict[str, Any]) -> str:
        return str(row["digits"])

    def score(self, completion: str, row: dict[str, Any]) -> Score:
        gold = str(row["digits"])
        answer = completion.strip("\n").split("\n", 1)[0] if completion else ""
        hits = sum(a == b for a, b in zip(answer, gold)) / len(gold)
        digits = sum(c.isdigit() for c in answer[: len(gold)]) / len(gold)
        reward = self.format_weight * digits + (1 - self.format_weight) * hits
        return Score(reward=reward, answer=answer or None)
