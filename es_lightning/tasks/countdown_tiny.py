"""``countdown_tiny``: reach a target from 3 or 4 small numbers; the coverage task of the CPU demo.

Generated rows carry ``"num_solutions"`` (a difficulty measure). The prompt and a worked solution as
``es-lightning/tiny-countdown`` was warm-started on::

    Q: 4 8 2 -> 10
    8-2=6
    6+4=10
    A: (8-2)+4

The expression after the **last** ``A:`` must use **each given number exactly once** and equal
``target`` exactly; :func:`classify` names what went wrong, for error analysis.
"""

from __future__ import annotations

import ast
import random
from collections import Counter
from fractions import Fraction
from functools import lru_cache
from typing import Any

from es_lightning.errors import ConfigError
from es_lightning.tasks.arithmetic import ANSWER_MARK, answer_line
from es_lightning.tasks.base import Score
from es_lightning.tasks.countdown import evaluate, problem_key
from es_lightning.tasks.families import GeneratedTask
from es_lightning.tasks.registry import register_task

_MAX_ANSWER_CHARS = 200

Step = tuple[int, str, int, int]
"""One step of a worked solution: ``(a, op, b, a op b)`` with ``a >= b``."""


@lru_cache(maxsize=100_000)
def solutions(pool: tuple[int, ...], max_value: int) -> dict[int, tuple[tuple[Step, ...], ...]]:
    """Every step sequence combining all of ``pool`` (sorted) into one number, by final value
    (cached: do not modify). A step replaces two numbers, larger first, by their sum, product,
    positive difference or exact quotient, never above ``max_value``."""
    if len(pool) == 1:
        return {pool[0]: ((),)}
    found: dict[int, list[tuple[Step, ...]]] = {}
    tried: set[tuple[int, int]] = set()
    for i in range(len(pool)):
        for j in range(i + 1, len(pool)):
            b, a = pool[i], pool[j]  # sorted: a >= b
            if (a, b) in tried:
                continue
            tried.add((a, b))
            rest = pool[:i] + pool[i + 1 : j] + pool[j + 1 :]
            results = [(a + b, "+"), (a * b, "*")]
            if a > b:
                results.append((a - b, "-"))
            if a % b == 0:
                results.append((a // b, "/"))
            for value, op in results:
                if value > max_value:
                    continue
                step = (a, op, b, value)
                for final, sequences in solutions(tuple(sorted((*rest, value))), max_value).items():
                    found.setdefault(final, []).extend((step, *seq) for seq in sequences)
    return {final: tuple(sequences) for final, sequences in found.items()}


def solution_expression(nums: list[int], steps: tuple[Step, ...]) -> str:
    """The expression a step sequence builds: ``5*3=15, 15+7=22`` gives ``"(5*3)+7"``."""
    pool: list[tuple[int, str]] = [(n, str(n)) for n in nums]

    def take(value: int) -> str:
        at = next(i for i in range(len(pool) - 1, -1, -1) if pool[i][0] == value)  # newest first
        return pool.pop(at)[1]

    for a, op, b, value in steps:
        left, right = take(a), take(b)
        pool.append((value, f"({left}{op}{right})"))
    if len(pool) != 1:
        raise ValueError(f"solution_expression: {len(steps)} steps leave {len(pool)} numbers of {nums}")
    expression = pool[0][1]
    return expression[1:-1] if expression.startswith("(") else expression


def worked_solution(nums: list[int], steps: tuple[Step, ...]) -> str:
    """The target completion for one step sequence (``5*3=15\\n15+7=22\\nA: (5*3)+7``)."""
    lines = [f"{a}{op}{b}={value}" for a, op, b, value in steps]
    return "\n".join([*lines, f"{ANSWER_MARK} {solution_expression(nums, steps)}"])


def extract_expression(completion: str) -> str | None:
    """The expression after the last ``A:`` (rule 1 of the module docstring), or ``None``."""
    line = answer_line(completion)
    return None if line is None else line.split("=", 1)[0].strip() or None


def _literals(expression: str) -> list[int]:
    """The integer literals of ``expression``, in any order (raises ``SyntaxError`` when it does not parse)."""
    tree = ast.parse(expression.replace("×", "*").replace("÷", "/"), mode="eval")
    return [
        node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and type(node.value) is int
    ]


def check(completion: str, row: dict[str, Any]) -> tuple[str, Fraction | None]:
    """``(verdict, value)``; the value is set for ``correct`` and ``wrong_value``."""
    expression = extract_expression(completion)
    if expression is None:
        return "no_answer", None
    if len(expression) > _MAX_ANSWER_CHARS:
        return "malformed", None
    try:
        literals = _literals(expression)
        value = evaluate(expression, literals)  # plain arithmetic only, exact, never run as Python
    except (SyntaxError, ValueError, ZeroDivisionError, RecursionError):
        return "malformed", None
    if Counter(literals) != Counter(int(n) for n in row["nums"]):
        return "wrong_numbers", None
    return ("correct" if value == int(row["target"]) else "wrong_value"), value


def classify(completion: str, row: dict[str, Any]) -> str:
    """The verdict of :func:`check` alone (for error analysis)."""
    return check(completion, row)[0]


@register_task
class CountdownTiny(GeneratedTask):
    """Small countdown puzzles (each number exactly once), generated from a seed or read from a file.

    A problem has 4 numbers with probability ``four_number_fraction`` (else 3); its target is
    uniform over the values :func:`solutions` reaches in at least ``min_solutions`` ways. The test
    split is the first ``n_test`` problems of the seeded stream, validation the next distinct ones,
    train the first in neither. The defaults are ``es-lightning/tiny-countdown``'s, which never saw
    the first 1,000 problems of the ``seed=0`` stream.

    Args:
        max_number: largest given number (the smallest is 1).
        max_target: largest target.
        max_value: largest intermediate result of the generator's solutions (at least
            ``max_target``).
        four_number_fraction: share of problems with 4 numbers instead of 3.
        min_solutions: fewest step sequences (:func:`solutions`) a generated problem has; 2 or more
            means every problem admits more than one path.
        n_train: generated training problems.
        n_test: generated test problems.
        seed: generator seed.
        n_validation: generated validation problems.
        **kwargs: ``train`` (rows with columns ``nums`` and ``target``), ``validation``, ``test``,
            ``system_prompt`` and ``prompt_template`` of
            :class:`~es_lightning.tasks.families.GeneratedTask`.
    """

    name = "countdown_tiny"
    required_columns = ("nums", "target")
    column_types = {"nums": list}
    default_template = "Q: {question}"

    def __init__(
        self,
        *,
        max_number: int = 20,
        max_target: int = 100,
        max_value: int = 400,
        four_number_fraction: float = 0.6,
        min_solutions: int = 2,
        n_train: int = 2000,
        n_test: int = 200,
        seed: int = 0,
        n_validation: int = 200,
        **kwargs: Any,
    ) -> None:
        self.check_at_least(
            max_number=(max_number, 1),
            max_target=(max_target, 1),
            min_solutions=(min_solutions, 1),
            max_value=(max_value, max_target),
        )
        if not 0.0 <= four_number_fraction <= 1.0:
            raise ConfigError(
                f"countdown_tiny: four_number_fraction must be in [0, 1], got {four_number_fraction}"
            )
        super().__init__(n_train=n_train, n_validation=n_validation, n_test=n_test, seed=seed, **kwargs)
        self.max_number, self.max_target, self.max_value = max_number, max_target, max_value
        self.four_number_fraction, self.min_solutions = four_number_fraction, min_solutions

    # -- data ---------------------------------------------------------------------------------
    def generate_split(self, split: str) -> list[dict[str, Any]]:
        """The first :meth:`split_size` problems of the seeded stream that no kept-apart split holds."""
        rng = random.Random(f"countdown_tiny-{self.seed}")
        settings = (
            f"max_number={self.max_number}, max_target={self.max_target}, min_solutions={self.min_solutions}"
        )
        exclude = self.kept_apart(split, problem_key)
        return self.draw_unique(
            self.split_size(split), lambda: self._draw(rng), problem_key, exclude, settings
        )

    def _draw(self, rng: random.Random) -> dict[str, Any] | None:
        count = 4 if rng.random() < self.four_number_fraction else 3
        nums = [rng.randint(1, self.max_number) for _ in range(count)]
        reached = solutions(tuple(sorted(nums)), self.max_value)
        targets = sorted(
            t for t, paths in reached.items() if t <= self.max_target and len(paths) >= self.min_solutions
        )
        if not targets:
            return None
        target = rng.choice(targets)
        steps = rng.choice(reached[target])
        return {
            "nums": nums,
            "target": target,
            "solution": solution_expression(nums, steps),
            "num_solutions": len(reached[target]),
        }

    # -- prompts and verification -------------------------------------------------------------
    def question(self, row: dict[str, Any]) -> str:
        return f"{' '.join(str(int(n)) for n in row['nums'])} -> {int(row['target'])}"

    def score(self, completion: str, row: dict[str, Any]) -> Score:
        verdict, value = check(completion, row)
        valid = verdict in ("correct", "wrong_value")
        answer = None if value is None else str(value)  # "7" or "7/2"
        return Score(
            reward=float(verdict == "correct"), answer=answer, extra={"valid_expression": float(valid)}
        )
