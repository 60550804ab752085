"""``arithmetic``: ``a+b-c`` with a two-line worked solution; the built-in model's reasoning task.

Rows are ``{"a": int, "b": int, "c": int}`` with each number in ``[1, max_number]``. The prompt
(default template) and the worked solution the built-in model ``es-lightning/tiny-arithmetic`` was
warm-started on (:func:`worked_solution`) look like this, ASCII only::

    Q: 12+7-5=?
    12+7=19
    19-5=14
    A: 14

Verification of a completion:

1. the answer is the text after the **last** ``A:``, up to the end of that line, stripped;
2. it must be an integer: an optional sign and at most 12 ASCII digits (``"14"``, ``"-3"``,
   ``"+07"``); anything else (empty, ``"14.0"``, ``"x"``) is no answer;
3. reward 1 when its value equals ``a + b - c``, else 0 (negative values are ordinary answers).

The majority-vote answer is the integer written canonically (``"+07"`` -> ``"7"``), ``None`` when
there is none. The working lines before ``A:`` are not checked.
"""

from __future__ import annotations

import random
import re
from typing import Any

from es_lightning.errors import ConfigError
from es_lightning.tasks.base import Score
from es_lightning.tasks.families import GeneratedTask
from es_lightning.tasks.registry import register_task

_ANSWER_MARK = "A:"
_INTEGER = re.compile(r"[+-]?[0-9]{1,12}")  # ASCII digits only: int() would accept "\u0661\u0664"


def true_value(row: dict[str, Any]) -> int:
    """``a + b - c`` of ``row``."""
    return int(row["a"]) + int(row["b"]) - int(row["c"])


def worked_solution(row: dict[str, Any]) -> str:
    """The target completion of ``row`` (no trailing newline): ``"12+7=19\\n19-5=14\\nA: 14"``."""
    a, b, c = int(row["a"]), int(row["b"]), int(row["c"])
    return f"{a}+{b}={a + b}\n{a + b}-{c}={a + b - c}\n{_ANSWER_MARK} {a + b - c}"


def extract_answer(completion: str) -> str | None:
    """The canonical integer after the last ``A:`` (rules 1-2 of the module docstring), or ``None``."""
    at = completion.rfind(_ANSWER_MARK)
    if at < 0:
        return None
    text = completion[at + len(_ANSWER_MARK) :].split("\n", 1)[0].strip()
    if not _INTEGER.fullmatch(text):
        return None
    return str(int(text))


@register_task
class Arithmetic(GeneratedTask):
    """``a+b-c`` problems, generated from a seed or read from a data source.

    Generation: each split draws ``(a, b, c)`` uniformly from ``[1, max_number]^3`` with its own
    seeded stream (``"arithmetic-{seed}-test"`` / ``"-train"``), skipping repeats; the train
    stream also skips every problem of the test split (generated or read from ``test``), so the
    splits never overlap. The generated test split of ``n_test`` rows is a prefix of the one with
    more rows (same seed and ``max_number``).

    Args:
        max_number: largest generated number (the smallest is 1).
        n_train: generated training problems.
        n_test: generated test problems.
        seed: generator seed.
        **kwargs: ``train`` (rows with columns ``a``, ``b``, ``c``), ``test``, ``system_prompt``
            and ``prompt_template`` of :class:`~es_lightning.tasks.families.GeneratedTask`.
    """

    name = "arithmetic"
    required_columns = ("a", "b", "c")
    default_template = "Q: {question}"

    def __init__(
        self, *, max_number: int = 30, n_train: int = 1000, n_test: int = 200, seed: int = 0, **kwargs: Any
    ) -> None:
        if max_number < 1:
            raise ConfigError(f"arithmetic: max_number must be at least 1, got {max_number}")
        super().__init__(n_train=n_train, n_test=n_test, seed=seed, **kwargs)
        generated = (n_train if self.train is None else 0) + (n_test if self.test is None else 0)
        if generated > max_number**3:
            raise ConfigError(
                f"arithmetic: {generated} generated problems (n_train + n_test) exceed the "
                f"{max_number**3} distinct ones with max_number={max_number}"
            )
        self.max_number = max_number

    # -- data ---------------------------------------------------------------------------------
    def generate_split(self, split: str) -> list[dict[str, Any]]:
        if split == "test":
            return self._draw("test", self.n_test, exclude=set())
        return self._draw("train", self.n_train, exclude={_key(row) for row in self.load("test")})

    def _draw(self, split: str, n: int, exclude: set[tuple[int, int, int]]) -> list[dict[str, Any]]:
        rng = random.Random(f"arithmetic-{self.seed}-{split}")
        seen = {key for key in exclude if all(1 <= x <= self.max_number for x in key)}
        if n > self.max_number**3 - len(seen):
            raise ConfigError(
                f"arithmetic: {n} {split} problems asked for, but only {self.max_number**3 - len(seen)} "
                f"with max_number={self.max_number} are not in the test split"
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
