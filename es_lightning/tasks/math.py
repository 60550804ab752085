"""Competition maths (MATH-500, DeepScaleR, AIME, AMC): a LaTeX answer in ``\\boxed{...}``, rewarded
1 when math-verify finds it equivalent to the gold (``verify(gold, pred)``), checked in a worker
process killed at its deadline (:mod:`es_lightning.tasks.bounded`).
"""

from __future__ import annotations

import logging
import re
from decimal import Decimal, InvalidOperation
from typing import Any

from es_lightning.console import warn
from es_lightning.errors import ConfigError
from es_lightning.tasks.base import Score
from es_lightning.tasks.bounded import call_within
from es_lightning.tasks.data import DataSource
from es_lightning.tasks.families import DatasetTask
from es_lightning.tasks.registry import register_task

log = logging.getLogger(__name__)

_BOX_COMMANDS = re.compile(r"\\(?:boxed|fbox)\b")
_SPACES = re.compile(r"\s*")
_BARE_ARGUMENT = re.compile(r" \s*([^\s${}]+)")


def last_boxed(text: str) -> str | None:
    """Content of the last complete ``\\boxed{...}``/``\\fbox{...}`` in ``text``, in linear time."""
    closing: dict[int, int] = {}
    stack: list[int] = []
    for i, char in enumerate(text):
        if char == "{":
            stack.append(i)
        elif char == "}" and stack:
            closing[stack.pop()] = i
    for match in reversed(list(_BOX_COMMANDS.finditer(text))):
        start = _SPACES.match(text, match.end()).end()
        if text.startswith("{", start):
            if start in closing:
                return text[start + 1 : closing[start]].strip()
            continue
        token = _BARE_ARGUMENT.match(text, match.end())  # "\boxed 5"
        if token:
            return token.group(1)
    return None


_DROP = (
    r"\left",
    r"\right",
    r"\!",
    r"\,",
    r"\;",
    r"\:",
    r"\ ",
    r"\$",
    "$",
    r"^\circ",
    r"^{\circ}",
    r"\%",
    "%",
)
_TEXT_WRAPPERS = re.compile(r"\\(?:text|textbf|mathrm|mbox|mathbf)\s*\{([^{}]*)\}")


def normalize_boxed(content: str) -> str:
    """A canonical string of a boxed answer for majority vote."""
    text = _TEXT_WRAPPERS.sub(r"\1", content)
    text = text.replace(r"\dfrac", r"\frac").replace(r"\tfrac", r"\frac")
    for token in _DROP:
        text = text.replace(token, "")
    text = re.sub(r"\s+", "", text).rstrip(".")
    if re.fullmatch(r"-?\d{1,3}(,\d{3})+(\.\d+)?", text):
        text = text.replace(",", "")
    try:
        value = Decimal(text)
    except InvalidOperation:
        return text
    return "0" if value == 0 else format(value.normalize(), "f")


def _checked(gold: str, pred: str, timeout_s: int) -> bool:
    """math-verify in the worker process (its main thread: its own alarms apply there too)."""
    try:
        from math_verify import parse, verify

        gold_parsed = parse("\\boxed{" + gold + "}", parsing_timeout=timeout_s)
        pred_parsed = parse("\\boxed{" + pred + "}", parsing_timeout=timeout_s)
        return bool(
            gold_parsed and pred_parsed and verify(gold_parsed, pred_parsed, timeout_seconds=timeout_s)
        )
    except Exception:  # math-verify may raise on exotic input; that is a wrong answer
        log.debug("math-verify failed on %r vs %r", gold, pred, exc_info=True)
        return False


def is_equivalent(gold: str, pred: str, timeout_s: int = 5) -> bool:
    """Whether ``pred`` equals ``gold`` by math-verify within ``3 * timeout_s`` seconds."""
    correct = call_within(3 * timeout_s, None, _checked, gold, pred, timeout_s, warm=("1", "1", 600))
    if correct is None:
        warn(f"math: verification timed out after {3 * timeout_s}s; scoring 0 (pred {pred[:80]!r})")
    return bool(correct)


@register_task
class MathTask(DatasetTask):
    """Competition maths: rows ``problem`` and ``answer`` (or ``solution`` with a boxed answer).

    Default sets: ``agentica-org/DeepScaleR-Preview-Dataset`` (train) and ``HuggingFaceH4/MATH-500``
    (test); AIME/AMC sets work with a ``column_map`` onto ``problem``/``answer``.

    Args:
        timeout_s: seconds math-verify may spend on one parse or comparison.
        **kwargs: ``train``, ``test``, ``system_prompt``, ``prompt_template`` of
            :class:`~es_lightning.tasks.families.DatasetTask`.
    """

    name = "math"
    default_template = "{question}\n\nReason step by step, and put your final answer within \\boxed{{}}."
    required_columns = ("problem",)
    column_types = {"problem": str}
    default_train = DataSource(path="agentica-org/DeepScaleR-Preview-Dataset", split="train")
    default_test = DataSource(path="HuggingFaceH4/MATH-500", split="test")

    def __init__(self, *, timeout_s: int = 5, **kwargs: Any) -> None:
        if timeout_s <= 0:
            raise ConfigError(f"math: timeout_s must be positive, got {timeout_s}")
        super().__init__(**kwargs)
        self.timeout_s = timeout_s

    def validate_row(self, row: dict[str, Any], where: str = "row") -> None:
        super().validate_row(row, where)
        if "answer" not in row and "solution" not in row:
            raise ConfigError(
                f"math: {where} has neither an 'answer' nor a 'solution' column; it has {sorted(row)}. "
                "Map the dataset's names with `column_map` in the data source."
            )
        try:
            self.gold(row)
        except ConfigError as err:
            raise ConfigError(f"{where}: {err}") from None

    def question(self, row: dict[str, Any]) -> str:
        return str(row["problem"])

    def gold(self, row: dict[str, Any]) -> str:
        """The gold answer: the ``answer`` column, else the last boxed answer of ``solution``."""
        answer = row.get("answer")
        if answer is not None and str(answer).strip():
            return str(answer).strip()
        boxed = last_boxed(str(row.get("solution") or ""))
        if boxed is None:
            raise ConfigError(
                "math: the row has no gold answer (no 'answer' column and no \\boxed{} in 'solution'); "
                f"its columns are {sorted(row)}"
            )
        return boxed

    def score(self, completion: str, row: dict[str, Any]) -> Score:
        pred = last_boxed(completion)
        if not pred:
            return Score(reward=0.0, answer=None)
        correct = is_equivalent(self.gold(row), pred, self.timeout_s)
        return Score(reward=float(correct), answer=normalize_boxed(pred))
