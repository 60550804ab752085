"""TRL's whole reward call: reward functions written as TRL's GRPOTrainer documentation writes them
run unchanged on a FunctionTask, with ``completion_ids``, ``trainer_state``, ``log_extra``,
``log_metric`` and ``async def``; a parameter that is neither TRL's nor a column is refused when the
data is loaded."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from es_lightning.errors import ConfigError
from es_lightning.tasks import DataSource, FunctionTask
from es_lightning.tasks.reward_calls import RewardFunctionError
from es_lightning.tasks.reward_context import MetricLog, TrainerState, reward_context


# -- TRL's documented examples ("Using a custom reward function"), written from its docs ----------
def reward_by_tokens(completion_ids, **kwargs):
    """Example 1: longer completions (in tokens) score higher."""
    return [float(len(ids)) for ids in completion_ids]


def reward_by_characters(completions, **kwargs):
    """Example 1.1: longer completions (in characters) score higher."""
    return [float(len(completion)) for completion in completions]


def format_reward_func(completions, **kwargs):
    """Example 2: a conversational completion in the <think>/<answer> format."""
    pattern = r"^<think>.*?</think><answer>.*?</answer>$"
    contents = [completion[0]["content"] for completion in completions]
    return [1.0 if re.match(pattern, content) else 0.0 for content in contents]


def boxed_reward(completions, ground_truth, **kwargs):
    """Example 3: the \\boxed{} content against the ground_truth column."""
    matches = [re.search(r"\\boxed\{(.*?)\}", completion) for completion in completions]
    contents = [match.group(1) if match else "" for match in matches]
    return [1.0 if c == gt else 0.0 for c, gt in zip(contents, ground_truth)]


def math_reward_func(prompts, completions, task, **kwargs):
    """Example 4: applies to math rows only (None elsewhere)."""
    return [(1.0 if c.strip() == "4" else -1.0) if t == "math" else None for c, t in zip(completions, task)]


def coding_reward_func(prompts, completions, task, **kwargs):
    """Example 4: applies to coding rows only."""
    return [(1.0 if "def " in c else -1.0) if t == "coding" else None for c, t in zip(completions, task)]


async def async_reward_func(prompts, completions, **kwargs):
    """Example 5: an asynchronous reward function."""
    await asyncio.sleep(0.001)
    return [1.0 if completion else 0.0 for completion in completions]


def logging_reward(completions, ground_truth, log_extra=None, log_metric=None, **kwargs):
    """Example 6: extra columns and a metric logged from the reward function."""
    extracted = [re.search(r"\\boxed\{(.*?)\}", c) for c in completions]
    extracted = [m.group(1) if m else None for m in extracted]
    rewards = [1.0 if e == gt else 0.0 for e, gt in zip(extracted, ground_truth)]
    if log_extra:
        log_extra("golden_answer", list(ground_truth))
        log_extra("extracted_answer", [e or "[none]" for e in extracted])
    if log_metric:
        log_metric("accuracy", sum(rewards) / len(rewards))
    return rewards


def curriculum(completions, trainer_state, **kwargs):
    """A reward that grows with the run's progress (TRL passes its TrainerState)."""
    share = trainer_state.global_step / max(trainer_state.max_steps, 1)
    return [share * float(len(c) > 0) for c in completions]


def test_completion_ids_and_characters_as_trl_documents_them():
    task = FunctionTask(reward_funcs=[reward_by_tokens, reward_by_characters])
    rows = [{"prompt": "The sky is"}, {"prompt": "The sun is"}]
    scores = task.score_many(
        [" blue.", " in the sky."], rows, completion_ids=[[6303, 13], [304, 279, 12884, 13]]
    )
    assert [s.extra for s in scores] == [
        {"rewards/reward_by_tokens": 2.0, "rewards/reward_by_characters": 6.0},
        {"rewards/reward_by_tokens": 4.0, "rewards/reward_by_characters": 12.0},
    ]
    assert [s.reward for s in scores] == [8.0, 16.0]


def test_conversational_format_reward():
    task = FunctionTask(reward_funcs=[format_reward_func])
    rows = [
        {"prompt": [{"role": "user", "content": "What is the result of (1 + 2) * 4?"}]},
        {"prompt": [{"role": "user", "content": "What is the result of (3 + 1) * 2?"}]},
    ]
    completions = [
        "<think>The sum of 1 and 2 is 3, times 4 is 12.</think><answer>(1 + 2) * 4 = 12</answer>",
        "The sum of 3 and 1 is 4, times 2 is 8. So (3 + 1) * 2 = 8.",
    ]
    assert [s.reward for s in task.score_many(completions, rows)] == [1.0, 0.0]


def test_reference_column_and_multi_task_none():
    boxed = FunctionTask(reward_funcs=[boxed_reward])
    rows = [
        {"prompt": "Solve 2x + 3 = 7.", "ground_truth": "2"},
        {"prompt": "Solve 3x - 5 = 10.", "ground_truth": "5"},
    ]
    assert [s.reward for s in boxed.score_many([r" \boxed{2}.", r" \boxed{6}."], rows)] == [1.0, 0.0]
    mixed = FunctionTask(reward_funcs=[math_reward_func, coding_reward_func])
    rows = [{"prompt": "What is 2+2?", "task": "math"}, {"prompt": "Write add.", "task": "coding"}]
    scores = mixed.score_many(["4", "def add(a, b): return a + b"], rows)
    assert [s.reward for s in scores] == [1.0, 1.0]
    assert [s.extra for s in scores] == [
        {"rewards/math_reward_func": 1.0},
        {"rewards/coding_reward_func": 1.0},
    ]


def test_async_reward_functions_are_awaited_also_inside_a_running_loop():
    task = FunctionTask(reward_funcs=[async_reward_func])
    rows = [{"prompt": "a"}, {"prompt": "b"}]
    assert [s.reward for s in task.score_many(["x", ""], rows)] == [1.0, 0.0]

    async def inside_a_loop():  # a notebook runs one
        return task.score_many(["x", ""], rows)

    assert [s.reward for s in asyncio.run(inside_a_loop())] == [1.0, 0.0]


def test_log_extra_reaches_each_score_and_log_metric_the_run_log():
    task = FunctionTask(reward_funcs=[logging_reward])
    rows = [{"prompt": "p", "ground_truth": "2"}, {"prompt": "q", "ground_truth": "5"}]
    log = MetricLog()
    with reward_context(TrainerState(global_step=3), log):
        scores = task.score_many([r"\boxed{2}", "no box"], rows)
        task.score_many([r"\boxed{5}", r"\boxed{5}"], rows)
    assert [s.logged for s in scores] == [
        {"golden_answer": "2", "extracted_answer": "2"},
        {"golden_answer": "5", "extracted_answer": "[none]"},
    ]
    assert log.drain() == {"accuracy": pytest.approx((0.5 + 0.5) / 2)}
    assert log.drain() == {}  # drained
    task.score_many([r"\boxed{2}"], rows[:1])  # outside a run: dropped, no error


def test_trainer_state_is_the_runs_progress():
    task = FunctionTask(reward_funcs=[curriculum])
    rows = [{"prompt": "p"}]
    assert task.score_many(["x"], rows)[0].reward == 0.0  # outside a run: step 0
    with reward_context(TrainerState(global_step=5, max_steps=20)):
        assert task.score_many(["x"], rows)[0].reward == 0.25


def test_a_bad_metric_or_column_is_refused_naming_the_function():
    def bad_metric(completions, log_metric, **kwargs):
        log_metric("loss", "high")
        return [0.0] * len(completions)

    def short_column(completions, log_extra, **kwargs):
        log_extra("why", ["only one"])
        return [0.0] * len(completions)

    rows = [{"prompt": "p"}, {"prompt": "q"}]
    with pytest.raises(
        RewardFunctionError,
        match=r"bad_metric \(.*test_trl_reward_call.py:\d+\): log_metric\('loss', \.\.\.\) takes a number",
    ):
        FunctionTask(reward_funcs=[bad_metric]).score_many(["a", "b"], rows)
    with pytest.raises(
        RewardFunctionError, match=r"log_extra\('why', \.\.\.\) got 1 values for 2 completions"
    ):
        FunctionTask(reward_funcs=[short_column]).score_many(["a", "b"], rows)


def test_completion_ids_required_but_scored_from_text_is_said_in_one_line():
    task = FunctionTask(reward_funcs=[reward_by_tokens])
    with pytest.raises(
        RewardFunctionError, match="takes completion_ids, which completions scored from their text"
    ):
        task.score_many(["a"], [{"prompt": "p"}])


def test_a_parameter_neither_trls_nor_a_column_is_refused_at_load(tmp_path):
    """Today's TRL names are no columns; a misspelt column is refused naming TRL's arguments."""

    def by_ids(completions, completion_ids, trainer_state, log_extra, log_metric, **kwargs):
        return [float(len(i)) for i in completion_ids]

    def misspelt(completions, completion_id, **kwargs):
        return [0.0] * len(completions)

    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"Say {i}"}) + "\n" for i in range(2)))
    assert len(FunctionTask(train=DataSource(path=str(data)), reward_funcs=[by_ids]).load("train")) == 2
    with pytest.raises(ConfigError) as raised:
        FunctionTask(train=DataSource(path=str(data)), reward_funcs=[by_ids, misspelt]).load("train")
    message = str(raised.value)
    assert "lacks column(s) ['completion_id'], which reward function misspelt takes" in message, message
    assert (
        "TRL's arguments are prompts, completions, completion_ids, trainer_state, log_extra, log_metric"
        in message
    )
    assert "\n" not in message
