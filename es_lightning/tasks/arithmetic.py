"""``arithmetic``: ``a+b-c`` with a two-line worked solution; the built-in model's reasoning task.

The prompt and the worked solution ``es-lightning/tiny-arithmetic`` was warm-started on::

    Q: 12+7-5=?
    12+7=19
    19-5=14
    A: 14

The answer (after the **last** ``A:``) must be an integer of at most 12 digits equal to ``a + b - c``.
"""

from __future__ import annotations

import random
import re
from typing import Any

from es_lightning.errors import ConfigError
from es_lightning.tasks.base import SPLITS, Score
from es_lightning.tasks.families import GeneratedTask
from es_lightning.tasks.registry import register_task

ANSWER_MARK = "A:"
"""What comes before the final answer in the worked solutions of ``arithmetic`` and ``countdown_tiny``."""
_INTEGER = re.compile(r"[+-]?[0-9]{1,12}")  # ASCII digits only: int() would accept "\u0661\u0664"


def true_value(row: dict[str, Any]) -> int:
    """``a + b - c`` of ``row``."""
    return int(row["a"]) + int(row["b"]) - int(row["c"])


def worked_solution(row: dict[str, Any]) -> str:
    """The target completion of ``row`` (no trailing newline): ``"12+7=19\\n19-5=14\\nA: 14"``."""
    a, b, c = int(row["a"]), int(row["b"]), int(row["c"])
    return f"{a}+{b}={a + b}\n{a + b}-{c}={a + b - c}\n{ANSWER_MARK} {a + b - c}"


def answer_line(completion: str) -> str | None:
    """The rest of the line after the last ``A:``, stripped; ``None`` when there is no ``A:``."""
    at = completion.rfind(ANSWER_MARK)
    return None if at < 0 else completion[at + len(ANSWER_MARK) :].split("\n", 1)[0].strip()


def extract_answer(completion: str) -> str | None:
    """The canonical integer after the last ``A:`` (rules 1-2 of the module docstring), or ``None``."""
    text = answer_line(completion)
    if text is None or not _INTEGER.fullmatch(text):
        return None
    return str(int(text))


@register_task
class Arithmetic(GeneratedTask):
    """``a+b-c`` problems, generated from a seed or read from a data source.

    Test and validation problems come from the ``"arithmetic-{seed}-test"`` stream (validation
    right after test), train from its own stream skipping both, so the three never overlap.
    ``es-lightning/tiny-arithmetic`` never saw the first 1,000 of the ``seed=0`` test stream.

    Args:
        max_number: largest generated number (the smallest is 1).
        n_train: generated training problems.
        n_test: generated test problems.
        seed: generator seed.
        n_validation: generated validation problems.
        **kwargs: ``train`` (rows with columns ``a``, ``b``, ``c``), ``validation``, ``test``,
            ``system_prompt`` and ``prompt_template`` of
            :class:`~es_lightning.tasks.families.GeneratedTask`.
    """

    name = "arithmetic"
    required_columns = ("a", "b", "c")
    default_template = "Q: {question}"

    def __init__(
        self,
        *,
        max_number: int = 30,
        n_train: int = 1000,
        n_test: int = 200,
        seed: int = 0,
        n_validation: int = 200,
        **kwargs: Any,
    ) -> None:
        self.check_at_least(max_number=(max_number, 1))
        super().__init__(n_train=n_train, n_validation=n_validation, n_test=n_test, seed=seed, **kwargs)
        generated = {f"n_{split}": self.split_size(split) for split in SPLITS if self.source(split) is None}
        if sum(generated.values()) > max_number**3:
            raise ConfigError(
                f"arithmetic: {sum(generated.values())} generated problems ({' + '.join(generated)}) "
                f"exceed the {max_number**3} distinct ones with max_number={max_number}"
            )
        self.max_number = max_number

    # -- data ---------------------------------------------------------------------------------
    def generate_split(self, split: str) -> list[dict[str, Any]]:
        stream = "train" if split == "train" else "test"  # validation: the test problems after test
        return self._draw(stream, self.split_size(split), self.kept_apart(split, _key), split)

    def _draw(
        self, stream: str, n: int, exclude: set[tuple[int, int, int]], split: str
    ) -> list[dict[str, Any]]:
        """The first ``n`` problems of ``stream`` not in ``exclude``, for ``split``."""
        rng = random.Random(f"arithmetic-{self.seed}-{stream}")
        seen = {key for key in exclude if all(1 <= x <= self.max_number for x in key)}
        if n > self.max_number**3 - len(seen):
            others = "the test split" if split != "train" else "the test and validation splits"
            raise ConfigError(
                f"arithmetic: {n} {split} problems asked for, but only {self.max_number**3 - len(seen)} "
                f"with max_number={self.max_number} are not in {others}"
            )
        rows: list[dict[str, Any]] = []
        while len(rows) < n:  # terminates: enough distinct problems are left (checked above)
            key = tuple(rng.randint(1, self.max_number) for _ in range(3))
            if key not in seen:
                seen.add(key)
                rows.append(dict(zip("abc", key)))
        return rows

    # -- prompts and verification -------------------------------------------------------------
    def question(self, row: dict[str, Any]) -> str:
        return f"{int(row['a'])}+{int(row['b'])}-{int(row['c'])}=?"

    def score(self, completion: str, row: dict[str, Any]) -> Score:
        answer = extract_answer(completion)
        if answer is None:
            return Score(reward=0.0, answer=None)
        return Score(reward=float(int(answer) == true_value(row)), answer=answer)


def _key(row: dict[str, Any]) -> tuple[int, int, int]:
    return int(row["a"]), int(row["b"]), int(row["c"])
