"""``echo``: repeat a digit string; a generated task whose reward a random tiny model can move.

Rows ``{"digits": "4821"}`` (seeded generator). The verifier gives partial credit on the
completion's first line ``a`` (L = len(digits), w = ``format_weight``):

    reward = w · (1/L) · Σ_{j<L} [a[j] is a digit] + (1 − w) · (1/L) · Σ_{j<L} [a[j] == digits[j]]

so rewards vary across an ES population even for a randomly initialised model, which makes it the
task of the CPU smoke recipes and of install checks. It is not a reasoning benchmark.
"""

from __future__ import annotations

import random
from typing import Any

from es_lightning.tasks.base import Score, Task
from es_lightning.tasks.data import DataSource
from es_lightning.tasks.registry import register_task


@register_task
class Echo(Task):
    """Repeat a random digit string.

    Args:
        train: rows with a ``digits`` column; ``None`` generates ``n_train`` rows.
        test: evaluation rows; ``None`` generates ``n_test`` rows (disjoint seed).
        system_prompt: optional system message.
        prompt_template: ``str.format`` template (fields: ``digits``, ``question``).
        length: digits per generated problem.
        n_train: generated training rows.
        n_test: generated test rows.
        seed: generator seed.
        format_weight: w, the share of the reward for answering with digits at all.
    """

    name = "echo"
    required_columns = ("digits",)
    default_template = "Repeat: {digits}\n"

    def __init__(
        self,
        train: DataSource | None = None,
        test: DataSource | None = None,
        system_prompt: str | None = None,
        prompt_template: str | None = None,
        length: int = 4,
        n_train: int = 256,
        n_test: int = 64,
        seed: int = 0,
        format_weight: float = 0.5,
    ) -> None:
        if not 0 <= format_weight <= 1:
            raise ValueError(f"echo: format_weight must be in [0, 1], got {format_weight}")
        self.format_weight = format_weight
        if length < 1 or n_train < 1 or n_test < 1:
            raise ValueError(
                f"echo: length, n_train and n_test must be >= 1, got {length}, {n_train}, {n_test}"
            )
        super().__init__(train, test, system_prompt, prompt_template)
        self.length, self.n_train, self.n_test, self.seed = length, n_train, n_test, seed

    def load(self, split: str = "train") -> list[dict[str, Any]]:
        source = {"train": self.train, "test": self.test}.get(split)
        if split not in ("train", "test") or source is not None:
            return super().load(split)
        rng = random.Random(f"echo-{self.seed}-{split}")
        count = self.n_train if split == "train" else self.n_test
        return [
            {"digits": "".join(rng.choice("0123456789") for _ in range(self.length))} for _ in range(count)
        ]

    def question(self, row: dict[str, Any]) -> str:
        return str(row["digits"])

    def score(self, completion: str, row: dict[str, Any]) -> Score:
        gold = str(row["digits"])
        answer = completion.strip("\n").split("\n", 1)[0] if completion else ""
        hits = sum(a == b for a, b in zip(answer, gold)) / len(gold)
        digits = sum(c.isdigit() for c in answer[: len(gold)]) / len(gold)
        reward = self.format_weight * digits + (1 - self.format_weight) * hits
        return Score(reward=reward, answer=answer or None)
