"""MBPP: write a Python function that passes the row's ``assert`` tests.

The code (the last fenced python block, else the whole text) runs in a
:class:`~es_lightning.sandbox.sandbox.Sandbox` child, never in this process; ``isolation: bwrap``
(default) is the security boundary (docs/sandbox.md), ``process`` an explicit opt-out. Reward 1
when every assert passes; no majority-vote answer.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from es_lightning.sandbox import Isolation, Sandbox, SandboxResult
from es_lightning.tasks.base import Score
from es_lightning.tasks.data import DataSource
from es_lightning.tasks.families import DatasetTask
from es_lightning.tasks.registry import register_task

_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_PYTHON_TAGS = {"python", "py", "python3"}


def extract_code(completion: str) -> str:
    """The program in ``completion`` (extraction rules of the module docstring)."""
    blocks = [(lang.lower(), body) for lang, body in _FENCE.findall(completion)]
    python = [body for lang, body in blocks if lang in _PYTHON_TAGS]
    return (python or [body for _, body in blocks] or [completion])[-1]


def _as_list(value: Any, column: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        raise ValueError(f"mbpp: column {column!r} must be a list of assert statements, got a string")
    return [str(v) for v in value]


@register_task
class MBPP(DatasetTask):
    """MBPP (Austin et al. 2021): rows ``text`` (the task), ``code`` (a reference solution),
    ``test_list``, and optionally ``test_setup_code`` and ``challenge_test_list``; default sets
    ``google-research-datasets/mbpp`` (``full``).

    Args:
        time_limit_s: wall-clock seconds per program run.
        memory_mb: memory limit per program run, in MiB.
        max_workers: program runs at a time in :meth:`score_many`.
        use_challenge_tests: also require the row's ``challenge_test_list`` asserts.
        isolation: ``"bwrap"`` runs programs in a bubblewrap sandbox (the security boundary; it
            needs bubblewrap, ``apt-get install bubblewrap``); ``"process"`` opts out explicitly
            and runs them as plain child processes, which is **not** a security boundary.
        **kwargs: ``train``, ``test``, ``system_prompt``, ``prompt_template`` of
            :class:`~es_lightning.tasks.families.DatasetTask`.
    """

    name = "mbpp"
    default_template = (
        "You are an expert Python programmer, and here is your task: {question}\n\n"
        "Write the solution in a ```python code block."
    )
    required_columns = ("text", "test_list")
    default_train = DataSource(path="google-research-datasets/mbpp", name="full", split="train")
    default_test = DataSource(path="google-research-datasets/mbpp", name="full", split="test")

    def __init__(
        self,
        *,
        time_limit_s: float = 5.0,
        memory_mb: int = 1024,
        max_workers: int = 4,
        use_challenge_tests: bool = False,
        isolation: Isolation = "bwrap",
        **kwargs: Any,
    ) -> None:
        if max_workers < 1:
            raise ValueError(f"mbpp: max_workers must be at least 1, got {max_workers}")
        super().__init__(**kwargs)
        self.sandbox = Sandbox(time_limit_s=time_limit_s, memory_mb=memory_mb, isolation=isolation)
        self.max_workers = max_workers
        self.use_challenge_tests = use_challenge_tests

    def tests(self, row: dict[str, Any]) -> list[str]:
        """The assert statements a program for ``row`` must pass."""
        tests = _as_list(row.get("test_list"), "test_list")
        if self.use_challenge_tests:
            tests += _as_list(row.get("challenge_test_list"), "challenge_test_list")
        if not tests:
            raise ValueError(f"mbpp: the row has no tests (task {row.get('task_id', '?')})")
        return tests

    def question(self, row: dict[str, Any]) -> str:
        tests = "\n".join(_as_list(row.get("test_list"), "test_list"))
        return f"{str(row['text']).strip()} Your code should pass these tests:\n\n{tests}"

    def _job(self, completion: str, row: dict[str, Any]) -> tuple[str, list[str], str]:
        return extract_code(completion), self.tests(row), str(row.get("test_setup_code") or "")

    @staticmethod
    def _score(result: SandboxResult) -> Score:
        extra = {"tests_passed": result.passed / result.total, "timed_out": float(result.timed_out)}
        return Score(reward=float(result.all_passed), answer=None, extra=extra)

    def score(self, completion: str, row: dict[str, Any]) -> Score:
        return self._score(self.sandbox.run(*self._job(completion, row)))

    def score_many(self, completions: Sequence[str], rows: Sequence[dict[str, Any]]) -> list[Score]:
        """Verify many completions, running up to ``max_workers`` sandboxes at a time."""
        if len(completions) != len(rows):
            raise ValueError(f"{self.name}: {len(completions)} completions for {len(rows)} rows")
        jobs = [self._job(c, r) for c, r in zip(completions, rows, strict=True)]
        return [self._score(result) for result in self.sandbox.run_many(jobs, self.max_workers)]
