"""``countdown_tiny``: reach a target from 3 or 4 small numbers; the coverage task of the CPU demo.

Rows are ``{"nums": [int, ...], "target": int}``; generated ones also carry ``"solution"`` (an
expression that solves it, :func:`solution_expression`) and ``"num_solutions"`` (how many step
sequences solve it under the generator's rules: a difficulty measure). The prompt (default
template) and a worked solution, as the built-in model ``es-lightning/tiny-countdown`` was
warm-started on, ASCII only::

    Q: 4 8 2 -> 10
    8-2=6
    6+4=10
    A: (8-2)+4

Most problems admit several paths: this one also ``8+4=12, 12-2=10``, ``4-2=2, 8+2=10`` and
``4/2=2, 8+2=10``. A step combines two numbers, larger first; each intermediate result is written
in parentheses in the answer. Problems vary in difficulty: 3 or 4 numbers, one- or two-digit
values, two or dozens of paths (``num_solutions``).

Verification of a completion:

1. the expression is the text after the **last** ``A:``, up to the end of that line, cut at its
   first ``=`` (``"A: (5*3)+7=22"`` counts as ``(5*3)+7``); the working lines are not checked;
2. it is parsed with :mod:`ast` by :func:`es_lightning.tasks.countdown.evaluate`, never run as
   Python: integer literals, binary ``+ - * /``, unary ``-``/``+`` and parentheses only;
3. it must use **each given number exactly once** (the same multiset of literals as ``nums``; a
   number given twice is used twice);
4. its exact value (:class:`fractions.Fraction`, so ``7/2`` is not rounded; division by zero is
   wrong) must equal ``target``.

Reward 1 when all four hold, else 0, so any valid expression scores 1, in any order and with any
parenthesisation. The majority-vote answer is the value of an expression that passes rules 2-3
(different correct expressions vote together); ``None`` otherwise. :func:`classify` names what
went wrong (``no_answer``, ``malformed``, ``wrong_numbers``, ``wrong_value``) for error analysis,
and each score carries ``extra["valid_expression"]``: 1 when rules 2-3 hold (the numbers were used
right), whatever the value.
"""

from __future__ import annotations

import ast
import random
from collections import Counter
from fractions import Fraction
from functools import lru_cache
from typing import Any

from es_lightning.errors import ConfigError
from es_lightning.tasks.base import Score
from es_lightning.tasks.countdown import evaluate
from es_lightning.tasks.families import GeneratedTask
from es_lightning.tasks.registry import register_task

_ANSWER_MARK = "A:"
_MAX_ANSWER_CHARS = 200

Step = tuple[int, str, int, int]
"""One step of a worked solution: ``(a, op, b, a op b)`` with ``a >= b``."""


@lru_cache(maxsize=100_000)
def solutions(pool: tuple[int, ...], max_value: int) -> dict[int, tuple[tuple[Step, ...], ...]]:
    """Every step sequence that combines all of ``pool`` (sorted ascending) into one number.

    The rules of generated problems (the verifier is laxer: any valid expression scores): a step
    takes two numbers of the pool, larger first, and replaces them by ``a + b``, ``a * b``,
    ``a - b`` (only when positive) or ``a / b`` (only when exact), never above ``max_value``.
    Equal numbers are interchangeable, so each distinct pair of values is tried once.

    Returns:
        ``{final value: (step sequence, ...)}`` (cached: do not modify it).
    """
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
    """The expression a step sequence builds, each intermediate result in parentheses and no
    spaces: ``[3, 5, 7]`` with ``5*3=15, 15+7=22`` gives ``"(5*3)+7"``."""
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
    """The target completion for one step sequence (no trailing newline)::

    5*3=15
    15+7=22
    A: (5*3)+7
    """
    lines = [f"{a}{op}{b}={value}" for a, op, b, value in steps]
    return "\n".join([*lines, f"{_ANSWER_MARK} {solution_expression(nums, steps)}"])


def extract_expression(completion: str) -> str | None:
    """The expression after the last ``A:`` (rule 1 of the module docstring), or ``None``."""
    at = completion.rfind(_ANSWER_MARK)
    if at < 0:
        return None
    text = completion[at + len(_ANSWER_MARK) :].split("\n", 1)[0].split("=", 1)[0].strip()
    return text or None


def _literals(expression: str) -> list[int]:
    """The integer literals of ``expression``, in any order (raises ``SyntaxError`` when it does not parse)."""
    tree = ast.parse(expression.replace("×", "*").replace("÷", "/"), mode="eval")
    return [
        node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and type(node.value) is int
    ]


def check(completion: str, row: dict[str, Any]) -> tuple[str, Fraction | None]:
    """What the verifier finds: ``(verdict, value)``, the verdict one of ``correct``,
    ``no_answer`` (no ``A:`` or nothing after it), ``malformed`` (not plain arithmetic, or division
    by zero), ``wrong_numbers`` (rule 3 broken) and ``wrong_value`` (rule 4 broken); the value is
    set for ``correct`` and ``wrong_value``."""
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

    Generation: each problem draws 4 numbers with probability ``four_number_fraction`` (else 3),
    each uniform in ``[1, max_number]``; the target is uniform over the values in
    ``[1, max_target]`` that :func:`solutions` reaches in at least ``min_solutions`` ways (the
    draw is retried when there is none). Problems are unique by (sorted numbers, target). The test
    split is the first ``n_test`` problems of the seeded stream (so a smaller test split is a prefix
    of a larger one); the validation split is the first ``n_validation`` problems of the stream that
    are not in the test split (generated, so the ones right after it, or read from ``test``); the
    train split is the first ``n_train`` problems that are in neither, so the three never overlap.

    The defaults are the settings ``es-lightning/tiny-countdown`` was warm-started with; with
    ``seed=0`` the first 1,000 problems of the stream were held out of that training, so both the
    default test split (problems 1-200) and the default validation split (201-400) are problems
    it never saw (while the train split overlaps its training data).

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
        sizes = {
            "max_number": (max_number, 1),
            "max_target": (max_target, 1),
            "min_solutions": (min_solutions, 1),
        }
        for arg, (given, low) in {**sizes, "max_value": (max_value, max_target)}.items():
            if given < low:
                raise ConfigError(f"countdown_tiny: {arg} must be at least {low}, got {given}")
        if not 0.0 <= four_number_fraction <= 1.0:
            raise ConfigError(
                f"countdown_tiny: four_number_fraction must be in [0, 1], got {four_number_fraction}"
            )
        super().__init__(n_train=n_train, n_validation=n_validation, n_test=n_test, seed=seed, **kwargs)
        self.max_number, self.max_target, self.max_value = max_number, max_target, max_value
        self.four_number_fraction, self.min_solutions = four_number_fraction, min_solutions

    # -- data ---------------------------------------------------------------------------------
    def generate_split(self, split: str) -> list[dict[str, Any]]:
        if split == "test":
            return self.generate(self.n_test)
        test = {_key(row) for row in self.split_rows("test")}
        if split == "validation":  # the problems after the (generated) test split
            return self.generate(self.n_validation, exclude=test)
        validation = (
            {_key(row) for row in self.split_rows("validation")}
            if self.n_validation or self.validation
            else set()
        )
        return self.generate(self.n_train, exclude=test | validation)

    def generate(
        self, n: int, exclude: set[tuple[tuple[int, ...], int]] | None = None
    ) -> list[dict[str, Any]]:
        """The first ``n`` unique problems of this task's seeded stream that are not in ``exclude``
        (a set of ``(sorted numbers, target)``)."""
        rng = random.Random(f"countdown_tiny-{self.seed}")
        rows: list[dict[str, Any]] = []
        seen = set(exclude or ())
        for _ in range(100 * n + 1000):
            if len(rows) == n:
                return rows
            row = self._draw(rng)
            if row is not None and _key(row) not in seen:
                seen.add(_key(row))
                rows.append(row)
        if len(rows) == n:
            return rows
        raise ConfigError(
            f"countdown_tiny: found only {len(rows)} distinct problems of the {n} asked for with "
            f"max_number={self.max_number}, max_target={self.max_target}, min_solutions={self.min_solutions}"
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
        answer = None if value is None else _format_value(value)
        return Score(
            reward=float(verdict == "correct"), answer=answer, extra={"valid_expression": float(valid)}
        )


def _format_value(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"


def _key(row: dict[str, Any]) -> tuple[tuple[int, ...], int]:
    return tuple(sorted(int(n) for n in row["nums"])), int(row["target"])
