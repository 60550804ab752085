"""Countdown: reach a target number with + - * / over given numbers.

The expression is the content of the **last** ``<answer>...</answer>`` (cut at ``=``), else the
last line that is only arithmetic; parsed with :mod:`ast`, never run, each literal one of ``nums``
at most as often as given, evaluated exactly and rewarded 1 when it equals ``target``. The
majority-vote answer is its value.
"""

from __future__ import annotations

import ast
import operator
import random
import re
from collections import Counter
from fractions import Fraction
from typing import Any

from es_lightning.tasks.base import Score
from es_lightning.tasks.families import GeneratedTask
from es_lightning.tasks.registry import register_task

_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_EXPRESSION_LINE = re.compile(r"(?=.*\d)[\d\s+\-*/()×÷]+")
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
_MAX_EXPRESSION_CHARS = 1000


def extract_expression(completion: str) -> str | None:
    """The expression a completion answers with (rule 1 of the module docstring), or ``None``."""
    tags = _ANSWER_TAG.findall(completion)
    if tags:
        return tags[-1].split("=", 1)[0].strip() or None
    for line in reversed(completion.splitlines()):
        candidate = line.strip().strip("$`*").strip()
        if candidate and _EXPRESSION_LINE.fullmatch(candidate):
            return candidate
    return None


def evaluate(expression: str, nums: list[int]) -> Fraction:
    """Exact value of ``expression`` built only from ``nums``; ValueError or ZeroDivisionError."""
    if len(expression) > _MAX_EXPRESSION_CHARS:
        raise ValueError(f"expression longer than {_MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(expression.replace("×", "*").replace("÷", "/"), mode="eval")
    except SyntaxError as err:
        raise ValueError(f"not an arithmetic expression: {expression!r}") from err
    literals: list[int] = []

    def value(node: ast.AST) -> Fraction:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            literals.append(node.value)
            return Fraction(node.value)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return _BINARY[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            operand = value(node.operand)
            return -operand if isinstance(node.op, ast.USub) else operand
        raise ValueError(f"{type(node).__name__} is not allowed in a countdown expression")

    result = value(tree.body)
    unavailable = Counter(literals) - Counter(nums)
    if unavailable:
        raise ValueError(f"uses {sorted(unavailable.elements())} beyond the given numbers {nums}")
    return result


def problem_key(row: dict[str, Any]) -> tuple[tuple[int, ...], int]:
    """What makes two problems the same: the sorted numbers and the target."""
    return tuple(sorted(int(n) for n in row["nums"])), int(row["target"])


@register_task
class Countdown(GeneratedTask):
    """Countdown arithmetic puzzles, generated with a seed or read from a data source.

    Generation combines ``num_numbers`` random numbers with random exact operations until one value
    is left, the target when it lies in ``[1, max_target]``. Problems are unique; the first
    ``n_test`` form the test split, the next ``n_validation`` validation, the next ``n_train`` train.

    Args:
        num_numbers: numbers per generated problem.
        max_number: largest generated number.
        max_target: largest generated target.
        n_train: generated training problems.
        n_test: generated test problems.
        seed: generator seed.
        n_validation: generated validation problems.
        **kwargs: ``train`` (rows with columns ``nums`` and ``target``), ``validation``, ``test``,
            ``system_prompt`` and ``prompt_template`` of
            :class:`~es_lightning.tasks.families.GeneratedTask`.
    """

    name = "countdown"
    required_columns = ("nums", "target")
    column_types = {"nums": list}

    def __init__(
        self,
        *,
        num_numbers: int = 4,
        max_number: int = 100,
        max_target: int = 1000,
        n_train: int = 10000,
        n_test: int = 500,
        seed: int = 0,
        n_validation: int = 200,
        **kwargs: Any,
    ) -> None:
        self.check_at_least(
            num_numbers=(num_numbers, 2), max_number=(max_number, 1), max_target=(max_target, 1)
        )
        super().__init__(n_train=n_train, n_validation=n_validation, n_test=n_test, seed=seed, **kwargs)
        self.num_numbers, self.max_number, self.max_target = num_numbers, max_number, max_target

    # -- data ---------------------------------------------------------------------------------
    def generate_split(self, split: str) -> list[dict[str, Any]]:
        """Rows ``start`` to ``start + split_size`` of the seeded stream of unique problems."""
        start = {"test": 0, "validation": self.n_test, "train": self.n_test + self.n_validation}[split]
        rng = random.Random(self.seed)
        settings = (
            f"num_numbers={self.num_numbers}, max_number={self.max_number}, max_target={self.max_target}"
        )
        rows = self.draw_unique(
            start + self.split_size(split), lambda: self._draw(rng), problem_key, settings=settings
        )
        return rows[start:]

    def _draw(self, rng: random.Random) -> dict[str, Any] | None:
        nums = [rng.randint(1, self.max_number) for _ in range(self.num_numbers)]
        pool = [(Fraction(n), str(n)) for n in nums]
        while len(pool) > 1:
            (a, ea), (b, eb) = (pool.pop(rng.randrange(len(pool))) for _ in range(2))
            if a < b:
                (a, ea), (b, eb) = (b, eb), (a, ea)
            options = [(a + b, f"{ea} + {eb}"), (a * b, f"{ea} * {eb}")]
            if a > b:
                options.append((a - b, f"{ea} - {eb}"))
            if (a / b).denominator == 1:
                options.append((a / b, f"{ea} / {eb}"))
            value, expression = rng.choice(options)
            pool.append((value, f"({expression})"))
        target, solution = pool[0]
        if not 1 <= target <= self.max_target:
            return None
        return {"nums": nums, "target": int(target), "solution": solution[1:-1]}

    # -- prompts and verification -------------------------------------------------------------
    def question(self, row: dict[str, Any]) -> str:
        nums = ", ".join(str(n) for n in row["nums"])
        return (
            f"Using the numbers [{nums}], create an expression that equals {row['target']}. "
            "You may use +, -, * and / and parentheses, and each number at most once. "
            "Show your work, then give only the expression in <answer> </answer> tags, "
            "for example <answer>(1 + 2) / 3</answer>."
        )

    def score(self, completion: str, row: dict[str, Any]) -> Score:
        expression = extract_expression(completion)
        if expression is None:
            return Score(reward=0.0, answer=None)
        try:
            value = evaluate(expression, [int(n) for n in row["nums"]])
        except (ValueError, ZeroDivisionError, RecursionError):
            return Score(reward=0.0, answer=None)
        return Score(reward=float(value == int(row["target"])), answer=str(value))  # "7" or "7/2"
