"""A reward function that raises, or returns anything but one finite number per completion, is
refused in one line naming the function, its file and line, and the row or value."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from es_lightning.tasks import FunctionTask
from es_lightning.tasks.reward_calls import RewardFunctionError, call_task_scores
from tests.helpers import line_of, user_module

SOURCE = """
import math


def picky(completions, answer, **kwargs):
    out = []
    for c, a in zip(completions, answer):
        if a == "boom":
            raise KeyError(f"no rule for {a}")
        out.append(float(c == a))
    return out


def nan_on_two(completions, **kwargs):
    return [float("nan") if c == "2" else 1.0 for c in completions]


def inf_reward(completions, **kwargs):
    return [math.inf for _ in completions]


def scalar(completions, **kwargs):
    return 0.5


def short(completions, **kwargs):
    return [1.0]


def words(completions, **kwargs):
    return ["yes" for _ in completions]


def as_array(completions, **kwargs):
    import numpy

    return numpy.array([1.0, None, 2], dtype=object)


def fails_on_batches(completions, **kwargs):
    if len(completions) > 1:
        raise RuntimeError("needs one at a time")
    return [1.0]
"""

ROWS = [
    {"prompt": "say 1", "answer": "1"},
    {"prompt": "say 2", "answer": "2"},
    {"prompt": "say it", "answer": "boom"},
]


@pytest.fixture()
def rewards(tmp_path: Path):
    """The reward functions above, imported from a real file as a recipe would name them."""
    with user_module(tmp_path, "user_rewards_mod", SOURCE) as imported:
        yield imported


def _refusal(func, completions=("1", "2", "x")) -> str:
    task = FunctionTask(reward_funcs=[func])
    with pytest.raises(RewardFunctionError) as err:
        task.score_many(list(completions), ROWS)
    assert "\n" not in str(err.value)
    return str(err.value)


def test_an_exception_names_function_file_line_error_and_row(rewards):
    module, file = rewards
    message = _refusal(module.picky)
    line = line_of(file, "raise KeyError")
    assert message == (
        f"user_rewards_mod.picky ({file}:{line}) raised KeyError: 'no rule for boom' on row 2 "
        "(prompt: 'say it')"
    )


def test_the_original_traceback_is_kept_as_the_cause(rewards):
    module, _ = rewards
    with pytest.raises(RewardFunctionError) as err:
        FunctionTask(reward_funcs=[module.picky]).score_many(["1", "2", "x"], ROWS)
    assert isinstance(err.value.__cause__, KeyError)


def test_a_failure_only_on_the_batch_is_said_so(rewards):
    module, file = rewards
    assert _refusal(module.fails_on_batches).endswith(
        f"({file}:{line_of(file, 'raise RuntimeError')}) raised RuntimeError: needs one at a time on a batch of 3 rows"
    )


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("nan_on_two", "returned nan on row 1; rewards must be finite numbers"),
        ("inf_reward", "returned inf on row 0; rewards must be finite numbers"),
        (
            "scalar",
            "returned 0.5 (a float); a reward function returns a list of 3 rewards, one per completion",
        ),
        ("short", "returned 1 rewards for 3 completions"),
        ("words", "returned 'yes' (a str) on row 0; rewards are numbers"),
    ],
)
def test_what_is_not_one_finite_number_per_completion_is_refused_by_name(rewards, name, expected):
    module, file = rewards
    message = _refusal(getattr(module, name))
    assert message.startswith(f"user_rewards_mod.{name} ({file}:{line_of(file, f'def {name}(')}) ")
    assert expected in message


def test_numbers_of_any_kind_and_none_are_accepted(rewards):
    module, _ = rewards
    scores = FunctionTask(reward_funcs=[module.as_array]).score_many(["a", "b", "c"], ROWS)
    assert [s.reward for s in scores] == [1.0, 0.0, 2.0]  # None: does not apply, adds nothing
    assert [s.extra for s in scores] == [{"rewards/as_array": 1.0}, {}, {"rewards/as_array": 2.0}]
    numpy_floats = FunctionTask(reward_funcs=[lambda completions, **kw: np.array([0.25, 1, 2])])
    assert [s.reward for s in numpy_floats.score_many(["a", "b", "c"], ROWS)] == [0.25, 1.0, 2.0]


TASK_SOURCE = """
from es_lightning.tasks import Echo
from es_lightning.tasks.base import Score


class Fragile(Echo):
    def score(self, completion, row):
        if completion == "boom":
            raise IndexError("list index out of range")
        return super().score(completion, row)


class NaNScores(Echo):
    def score(self, completion, row):
        return Score(reward=float("nan") if completion == "2" else 1.0, answer=None)


class Reprompted(Echo):
    def prompt(self, row):
        return "repeat " + row["digits"]
"""
TASK_ROWS = [{"digits": "1"}, {"digits": "2"}, {"digits": "3"}]


@pytest.fixture()
def tasks(tmp_path: Path):
    """User Task subclasses, imported from a real file as a recipe would name them."""
    with user_module(tmp_path, "user_tasks_mod", TASK_SOURCE) as imported:
        yield imported


def test_your_task_raising_is_said_in_one_line_with_its_row(tasks):
    module, file = tasks
    with pytest.raises(RewardFunctionError) as err:
        call_task_scores(module.Fragile(), ["1", "boom", "3"], TASK_ROWS)
    assert str(err.value) == (
        f"user_tasks_mod.Fragile.score ({file}:{line_of(file, 'raise IndexError')}) raised IndexError: "
        "list index out of range on row 1 (completion: 'boom')"
    )
    assert isinstance(err.value.__cause__, IndexError)


def test_a_score_that_is_not_finite_is_refused_by_row(tasks):
    module, file = tasks
    with pytest.raises(RewardFunctionError) as err:
        call_task_scores(module.NaNScores(), ["1", "2", "3"], TASK_ROWS)
    assert str(err.value) == (
        f"user_tasks_mod.NaNScores.score ({file}:{line_of(file, 'class NaNScores') + 1}) "
        "returned a score with reward nan on row 1; a Score's reward is a finite number in [0, 1]"
    )


def test_a_built_in_score_failing_keeps_its_traceback(tasks):
    """A subclass that only changes the prompt scores with Echo's own score: a failure there is
    es-lightning's bug, not yours, and is not reworded."""
    module, _ = tasks
    with pytest.raises(KeyError):
        call_task_scores(module.Reprompted(), ["1"], [{"no_digits": "1"}])
    scores = call_task_scores(module.Reprompted(), ["1", "9"], TASK_ROWS[:2])
    assert [s.reward for s in scores] == [1.0, 0.5]  # Echo's: format half, digits half
