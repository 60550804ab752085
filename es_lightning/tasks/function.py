"""Your own data and reward functions, in TRL's reward-function convention::

    def exact(prompts, completions, answer, **kwargs):
        return [float(c.strip() == a) for c, a in zip(completions, answer)]

:class:`FunctionTask` calls each function as TRL's ``GRPOTrainer`` does
(:mod:`es_lightning.tasks.reward_context`), so a reward function written for TRL runs unchanged. A
completion's reward is Σᵢ wᵢ·rᵢ over the functions that returned a number; a parameter without a
default that is none of TRL's arguments is a dataset column, checked at load time.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

from es_lightning.errors import ConfigError
from es_lightning.tasks.base import Score
from es_lightning.tasks.data import DataSource
from es_lightning.tasks.families import DatasetTask
from es_lightning.tasks.registry import register_task
from es_lightning.tasks.reward_calls import call_reward_function, required_parameters
from es_lightning.tasks.reward_context import TRL_ARGUMENTS, current_reward_context, trl_arguments

RewardFunc = Callable[..., Sequence[float | None]]


def resolve_reward_func(func: RewardFunc | str) -> RewardFunc:
    """``func`` itself, or the callable an import path (``pkg.mod.name`` or ``pkg.mod:name``) names."""
    if callable(func):
        return func
    module_name, sep, attr = str(func).replace(":", ".").rpartition(".")
    try:
        found = getattr(importlib.import_module(module_name), attr) if sep else None
    except (ImportError, AttributeError) as err:
        raise ConfigError(f"reward_funcs: cannot import {func!r} ({err})") from None
    if not callable(found):
        raise ConfigError(f"reward_funcs: {func!r} names no callable")
    return found


def reward_columns(func: Callable) -> tuple[str, ...]:
    """The dataset columns ``func`` requires: its parameters without a default but TRL's.

    >>> def exact(prompts, completions, completion_ids, answer, unit="", **kwargs): ...
    >>> reward_columns(exact)
    ('answer',)
    """
    return tuple(name for name in required_parameters(func) if name not in TRL_ARGUMENTS)


def is_conversation(prompt: Any) -> bool:
    """Whether a prompt is a list of chat messages (``{"role": ..., "content": ...}``)."""
    return isinstance(prompt, list) and all(isinstance(m, dict) and "role" in m for m in prompt)


@register_task
class FunctionTask(DatasetTask):
    """A task made of a dataset and reward functions (the module docstring gives the convention).

    Args:
        train: training rows: a hub dataset or a local ``.jsonl``/``.json``/``.csv``/``.parquet``
            file (``datasets.load_dataset`` semantics); from Python also a ``datasets.Dataset``
            or ``IterableDataset`` (as TRL takes ``train_dataset``) or a list of row dicts.
        test: evaluation rows, given as ``train`` (``None``: none; Pass@K then needs ``eval_tasks``).
        reward_funcs: the reward functions, as callables or import paths.
        reward_weights: one weight per function (default: 1 each).
        prompt_column: the column holding the prompt: text, or a list of chat messages.
        name: the task's name in metric keys (``eval/{name}/pass@k``).
        **kwargs: ``system_prompt`` and ``prompt_template`` (used for text prompts, with the row's
            columns and ``question`` = the prompt) of :class:`~es_lightning.tasks.base.Task`.
    """

    name = "function"
    extracts_answers = False  # rewards only: no answer to majority-vote on, so no maj@k

    def __init__(
        self,
        *,
        train: DataSource | None = None,
        test: DataSource | None = None,
        reward_funcs: list[Callable | str],
        reward_weights: list[float] | None = None,
        prompt_column: str = "prompt",
        name: str = "function",
        **kwargs: Any,
    ) -> None:
        if not reward_funcs:
            raise ConfigError("FunctionTask: give at least one reward function in reward_funcs")
        weights = [1.0] * len(reward_funcs) if reward_weights is None else [float(w) for w in reward_weights]
        if len(weights) != len(reward_funcs):
            raise ConfigError(
                f"FunctionTask: {len(weights)} reward_weights for {len(reward_funcs)} reward_funcs"
            )
        if not name or "/" in name:
            raise ConfigError(f"FunctionTask: name {name!r} must be non-empty and without '/'")
        self.name = name
        super().__init__(train=train, test=test, **kwargs)
        self.reward_funcs = [resolve_reward_func(f) for f in reward_funcs]
        self.reward_weights = weights
        self.prompt_column = prompt_column
        self.required_columns = (prompt_column,)

    def validate_row(self, row: dict[str, Any], where: str = "row") -> None:
        """Also: every column a reward function requires, so a missing one fails at load time."""
        super().validate_row(row, where)
        for func in self.reward_funcs:
            absent = [c for c in reward_columns(func) if c not in row]
            if absent:
                raise ConfigError(
                    f"{self.name}: {where} lacks column(s) {absent}, which reward function "
                    f"{_name(func)} takes (TRL's arguments are {', '.join(TRL_ARGUMENTS)}; every other "
                    f"parameter without a default is a column); the row has {sorted(row)}. Map the "
                    "dataset's names with `column_map` in the data source."
                )

    def question(self, row: dict[str, Any]) -> str:
        prompt = row[self.prompt_column]
        return "\n".join(m["content"] for m in prompt) if is_conversation(prompt) else str(prompt)

    def chat_messages(self, row: dict[str, Any]) -> list[dict[str, str]] | None:
        prompt = row[self.prompt_column]
        return list(prompt) if is_conversation(prompt) else None

    def score(self, completion: str, row: dict[str, Any]) -> Score:
        return self.score_many([completion], [row])[0]

    @property
    def reward_names(self) -> list[str]:
        """Each reward function's name, as metric keys and samples show it (``train/rewards/<name>``)."""
        return [_name(f) for f in self.reward_funcs]

    def score_many(
        self,
        completions: Sequence[str],
        rows: Sequence[dict[str, Any]],
        completion_ids: Sequence[Sequence[int]] | None = None,
    ) -> list[Score]:
        """Every reward function on the batch, called as TRL calls it."""
        if len(completions) != len(rows):
            raise ValueError(f"{self.name}: {len(completions)} completions for {len(rows)} rows")
        if completion_ids is not None and len(completion_ids) != len(completions):
            raise ValueError(
                f"{self.name}: {len(completion_ids)} completion_ids for {len(completions)} completions"
            )
        prompts = [row[self.prompt_column] for row in rows]
        shown = [
            [{"role": "assistant", "content": c}] if is_conversation(p) else c
            for p, c in zip(prompts, completions)
        ]
        skipped = {self.prompt_column, *TRL_ARGUMENTS}  # TRL's arguments win over same-named columns
        columns = {k: [row.get(k) for row in rows] for k in rows[0] if k not in skipped} if rows else {}
        context, logged = current_reward_context(), {}
        per_func = [
            call_reward_function(
                func, prompts, shown, columns, trl_arguments(func, context, completion_ids, logged, len(rows))
            )
            for func in self.reward_funcs
        ]
        scores = []
        for i in range(len(completions)):
            given = [(w, r[i]) for w, r in zip(self.reward_weights, per_func) if r[i] is not None]
            reward = sum(w * r for w, r in given)
            extra = {f"rewards/{n}": r[i] for n, r in zip(self.reward_names, per_func) if r[i] is not None}
            shown_values = {column: values[i] for column, values in logged.items()}
            scores.append(Score(reward=reward, answer=None, extra=extra, logged=shown_values))
        return scores


def _name(func: Callable) -> str:
    return getattr(func, "__name__", type(func).__name__)
