"""GSM8K: grade-school maths word problems with a single numeric answer: the first number after the
**last** ``####`` (else the last number), normalised and rewarded 1 when it equals the gold."""

from __future__ import annotations

import re
from decimal import Context, Decimal, InvalidOperation
from typing import Any

from es_lightning.errors import ConfigError
from es_lightning.tasks.base import Score
from es_lightning.tasks.data import DataSource
from es_lightning.tasks.families import DatasetTask
from es_lightning.tasks.registry import register_task

_NUMBER = re.compile(r"(?:(?<![\w)\]])-)?\$?\s?(?:\d[\d,]*(?:\.\d+)?|\.\d+)")
"""A number: optional ``-`` (not when it follows a word or bracket, i.e. a minus sign), optional ``$``,
digits with ``,`` separators and an optional decimal part."""
_MARKER = "####"
_PLAIN_DIGITS = 1000
"""Numbers with a larger decimal exponent are kept in scientific notation (``1E+1001``)."""


def normalize_number(text: str) -> str:
    """Canonical form of a numeric answer: exact, plain decimal, no trailing zeros; text cleaned."""
    cleaned = re.sub(r"[\s,$]", "", text).rstrip(".")
    try:
        value = Decimal(cleaned)
    except InvalidOperation:
        return cleaned
    if not value.is_finite():
        return cleaned
    if value == 0:
        return "0"
    exact = Context(prec=len(value.as_tuple().digits))  # no rounding: 18.000…001 stays itself
    if abs(value.adjusted()) > _PLAIN_DIGITS:  # 1e999999999 in plain notation would be a GB
        return str(value.normalize(exact))
    return format(value.normalize(exact), "f")


def extract_answer(text: str) -> str | None:
    """The normalised final answer of a solution or completion (module docstring), or ``None``."""
    if _MARKER in text:
        tail = text.rsplit(_MARKER, 1)[1].strip()
        match = _NUMBER.search(tail)
        if match:
            return normalize_number(match.group())
        first_line = tail.splitlines()[0] if tail else ""
        return normalize_number(first_line) or None
    numbers = _NUMBER.findall(text)
    return normalize_number(numbers[-1]) if numbers else None


def answers_match(answer: str, gold: str) -> bool:
    """Whether two normalised answers agree: numerically when both are numbers, else as strings."""
    try:
        return Decimal(answer) == Decimal(gold)
    except InvalidOperation:
        return answer == gold


@register_task
class GSM8K(DatasetTask):
    """GSM8K (Cobbe et al. 2021): rows ``question`` and ``answer`` (a worked solution ending in
    ``#### <number>``).

    Args:
        train: training rows; ``None`` uses ``openai/gsm8k`` (``main``) split ``train``.
        test: evaluation rows; ``None`` uses ``openai/gsm8k`` (``main``) split ``test``.
    """

    name = "gsm8k"
    default_template = (
        "{question}\n\nSolve the problem step by step. "
        'Finish with the final answer on its own line in the form "#### <number>".'
    )
    required_columns = ("question", "answer")
    column_types = {"question": str, "answer": str}
    default_train = DataSource(path="openai/gsm8k", name="main", split="train")
    default_test = DataSource(path="openai/gsm8k", name="main", split="test")

    def validate_row(self, row: dict[str, Any], where: str = "row") -> None:
        """The columns, and a gold answer (``#### <number>``) that :meth:`gold` can read."""
        super().validate_row(row, where)
        if extract_answer(row["answer"]) is None:
            raise ConfigError(f"gsm8k: {where}: the gold answer {row['answer'][-80:]!r} gives no answer")

    def question(self, row: dict[str, Any]) -> str:
        return str(row["question"])

    def gold(self, row: dict[str, Any]) -> str:
        """The normalised gold answer of ``row`` (its ``answer`` column)."""
        gold = extract_answer(str(row["answer"]))
        if gold is None:
            raise ConfigError(f"gsm8k: the row's gold answer {str(row['answer'])[-80:]!r} gives no answer")
        return gold

    def score(self, completion: str, row: dict[str, Any]) -> Score:
        answer = extract_answer(completion)
        if answer is None:
            return Score(reward=0.0, answer=None)
        return Score(reward=float(answers_match(answer, self.gold(row))), answer=answer)
