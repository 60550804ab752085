"""Calls into your reward functions: a failure, or a reward that is not a finite number, is yours
to fix and is said in one line (:class:`RewardFunctionError`, exit status 2) that names the function,
where it is and the value or row. One NaN would make a whole batch's z-scores NaN. The built-in
tasks' failures are bugs and keep their tracebacks.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from es_lightning.errors import ConfigError


class RewardFunctionError(ConfigError):
    """A reward function raised, or returned something that is not one finite number per completion."""


def describe(func: Callable) -> str:
    """``module.name`` of a reward function (its class's for a callable object)."""
    target = func if hasattr(func, "__qualname__") else type(func)
    module = getattr(target, "__module__", None)
    name = getattr(target, "__qualname__", None) or type(func).__name__
    return f"{module}.{name}" if module and module not in ("builtins", "__main__") else name


def where(func: Callable, error: BaseException | None = None) -> str:
    """``file:line`` where ``error`` raised in ``func``'s file, else of ``func``'s definition."""
    target = inspect.unwrap(func if inspect.isroutine(func) else type(func))
    try:
        file = inspect.getsourcefile(target)
    except TypeError:  # a builtin
        file = None
    if file is None:
        return "<unknown>"
    frames = [] if error is None else traceback.extract_tb(error.__traceback__)
    lines = [frame.lineno for frame in frames if frame.filename == file]
    if lines:
        return f"{file}:{lines[-1]}"
    try:
        return f"{file}:{inspect.getsourcelines(target)[1]}"
    except (OSError, TypeError):
        return file


def call_reward_function(
    func: Callable,
    prompts: Sequence[Any],
    completions: Sequence[Any],
    columns: dict[str, list[Any]],
    given: dict[str, Any] | None = None,
) -> list[float | None]:
    """``func(prompts=..., completions=..., **columns, **given)``, checked: a finite float per completion."""
    given = dict(given or {})
    if "completion_ids" not in given and "completion_ids" in required_parameters(func):
        raise RewardFunctionError(
            f"{describe(func)} ({where(func)}) takes completion_ids, which completions scored from "
            "their text alone (es-lightning evaluate --completions) do not have; give the parameter "
            "a default (completion_ids=None)"
        )
    try:
        returned = awaited(func(prompts=prompts, completions=completions, **columns, **given))
    except RewardFunctionError:  # said by log_metric/log_extra, already naming the function
        raise
    except Exception as err:
        row = _failing_row(func, prompts, completions, columns, given)
        at = (
            f" on row {row} (prompt: {_short(prompts[row])})"
            if row is not None
            else f" on a batch of {len(prompts)} rows"
        )
        raise _raised(f"{describe(func)} ({where(func, err)})", err, at) from err
    return check_rewards(func, returned, len(completions))


def check_rewards(func: Callable, returned: Any, expected: int) -> list[float | None]:
    """``returned`` as a list of floats (``None`` kept) after the checks of the module docstring."""
    name = f"{describe(func)} ({where(func)})"
    if returned is None or isinstance(returned, (str, bytes, dict)) or not _iterable(returned):
        raise RewardFunctionError(
            f"{name} returned {_short(returned)} (a {type(returned).__name__}); a reward function "
            f"returns a list of {expected} rewards, one per completion (None where it does not apply)"
        )
    rewards = list(returned)
    if len(rewards) != expected:
        raise RewardFunctionError(f"{name} returned {len(rewards)} rewards for {expected} completions")
    for row, value in enumerate(rewards):
        if value is None:
            continue
        number = _as_float(value)
        if number is None:
            raise RewardFunctionError(
                f"{name} returned {_short(value)} (a {type(value).__name__}) on row {row}; rewards "
                "are numbers (or None where the function does not apply)"
            )
        if not math.isfinite(number):
            raise RewardFunctionError(
                f"{name} returned {number} on row {row}; rewards must be finite numbers (None where "
                "the function does not apply)"
            )
        rewards[row] = number
    return rewards


def _failing_row(
    func: Callable,
    prompts: Sequence[Any],
    completions: Sequence[Any],
    columns: dict[str, list[Any]],
    given: dict[str, Any],
) -> int | None:
    """The first row on which ``func`` alone raises, or ``None``."""
    if len(prompts) <= 1:
        return 0 if prompts else None
    quiet = {**given, **{k: lambda *a, **kw: None for k in ("log_extra", "log_metric") if k in given}}

    def call_one(i: int) -> None:
        ids = {"completion_ids": [given["completion_ids"][i]]} if "completion_ids" in given else {}
        one_row = {k: [v[i]] for k, v in columns.items()}
        awaited(func(prompts=[prompts[i]], completions=[completions[i]], **one_row, **{**quiet, **ids}))

    return _first_failing(len(prompts), call_one)


def _first_failing(count: int, call_one: Callable[[int], Any]) -> int | None:
    """The first of rows ``0 .. count - 1`` on which ``call_one(row)`` raises, or ``None``."""
    for i in range(count):
        try:
            call_one(i)
        except Exception:
            return i
    return None


def _raised(name: str, err: Exception, at: str) -> RewardFunctionError:
    """The one-line error for user code ``name`` that raised ``err`` (``at``: on which row)."""
    message = str(err).splitlines()[0] if str(err) else ""
    return RewardFunctionError(f"{name} raised {type(err).__name__}: {message}{at}")


def required_parameters(func: Callable) -> tuple[str, ...]:
    """``func``'s parameters that take a keyword and have no default (none without a signature)."""
    try:
        parameters = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: nothing to check
        return ()
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return tuple(p.name for p in parameters if p.kind in kinds and p.default is inspect.Parameter.empty)


def awaited(returned: Any) -> Any:
    """``returned``, or its result when awaitable, run on an event loop of its own."""
    if not inspect.isawaitable(returned):
        return returned

    async def wait() -> Any:
        return await returned

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wait())
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, wait()).result()


def _iterable(value: Any) -> bool:
    if getattr(value, "ndim", 1) == 0:  # a 0-d tensor or array is a scalar
        return False
    try:
        iter(value)
    except TypeError:
        return False
    return True


def _as_float(value: Any) -> float | None:
    if isinstance(value, (str, bytes)):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def call_task_scores(
    task: Any,
    completions: Sequence[str],
    rows: Sequence[dict[str, Any]],
    completion_ids: Sequence[Sequence[int]] | None = None,
) -> list[Any]:
    """``task.score_many(completions, rows)``, every reward checked, a user task's error in one line."""
    klass = type(task)
    method = klass.score if _ours(klass.score_many) else klass.score_many  # the one you wrote
    user_code = not _ours(method)
    name = f"{describe(klass)}.{method.__name__}"
    ids = {"completion_ids": completion_ids} if completion_ids is not None and _takes_ids(task) else {}
    try:
        scores = list(task.score_many(completions, rows, **ids))
    except RewardFunctionError:  # a reward function's failure, said already
        raise
    except Exception as err:
        if not user_code:
            raise
        count = min(len(completions), len(rows))
        row = _first_failing(count, lambda i: task.score_many([completions[i]], [rows[i]]))
        at = f" on row {row} (completion: {_short(completions[row])})" if row is not None else ""
        raise _raised(f"{name} ({where(method, err)})", err, at) from err
    if len(scores) != len(completions):
        raise RewardFunctionError(
            f"{name} ({where(method)}) returned {len(scores)} scores for {len(completions)} completions"
        )
    for row, score in enumerate(scores):
        reward = _as_float(getattr(score, "reward", None))
        if reward is None or not math.isfinite(reward):
            raise RewardFunctionError(
                f"{name} ({where(method)}) returned a score with reward "
                f"{_short(getattr(score, 'reward', score))} on row {row}; a Score's reward is a finite "
                "number in [0, 1]"
            )
    return scores


def _takes_ids(task: Any) -> bool:
    try:
        return "completion_ids" in inspect.signature(task.score_many).parameters
    except (TypeError, ValueError):
        return False


def _ours(method: Any) -> bool:
    return str(getattr(method, "__module__", "")).startswith("es_lightning.")
