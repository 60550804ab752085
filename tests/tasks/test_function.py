"""FunctionTask with reward functions written TRL's way, and Task.reward_fn called TRL's way."""

from __future__ import annotations

import json

import pytest

from es_lightning.errors import ConfigError
from es_lightning.module import ReasoningModule
from es_lightning.tasks import GSM8K, DataSource, FunctionTask
from es_lightning.tasks.function import resolve_reward_func


# Reward functions as TRL's documentation writes them: the completions, named columns, **kwargs.
def reward_len(completions, **kwargs):
    return [-abs(20 - len(completion)) for completion in completions]


def format_reward(completions, **kwargs):
    """Conversational: each completion is a list of messages."""
    return [1.0 if completion[0]["content"].startswith("A:") else 0.0 for completion in completions]


def exact(prompts, completions, answer, **kwargs):
    return [float(c.strip() == a) if a is not None else None for c, a in zip(completions, answer)]


def test_trl_style_functions_weighted_with_none_skipped():
    task = FunctionTask(reward_funcs=[exact, reward_len], reward_weights=[1.0, 0.5], name="mine")
    rows = [
        {"prompt": "Say 7", "answer": "7"},
        {"prompt": "Say 8", "answer": "8"},
        {"prompt": "Say anything", "answer": None},  # `exact` does not apply: it returns None
    ]
    scores = task.score_many(["7", "nine", "x" * 20], rows)
    assert [s.reward for s in scores] == [1.0 + 0.5 * -19, 0.0 + 0.5 * -16, 0.5 * 0]
    assert scores[0].extra == {"rewards/exact": 1.0, "rewards/reward_len": -19.0}
    assert scores[2].extra == {"rewards/reward_len": 0.0}
    assert task.score("8", rows[1]).reward == 1.0 + 0.5 * -19
    assert task.name == "mine"


def test_each_function_gets_prompts_completions_and_every_column():
    seen = {}

    def spy(prompts, completions, **kwargs):
        seen.update(prompts=prompts, completions=completions, **kwargs)
        return [0.0] * len(completions)

    task = FunctionTask(reward_funcs=[spy])
    task.score_many(
        ["a", "b"], [{"prompt": "p1", "answer": "1", "level": 3}, {"prompt": "p2", "answer": "2", "level": 4}]
    )
    trl = {k: seen.pop(k) for k in ("trainer_state", "log_extra", "log_metric")}
    assert seen == {"prompts": ["p1", "p2"], "completions": ["a", "b"], "answer": ["1", "2"], "level": [3, 4]}
    assert (
        trl["trainer_state"].global_step == 0 and callable(trl["log_extra"]) and callable(trl["log_metric"])
    )
    task.score_many(["a"], [{"prompt": "p1", "answer": "1", "level": 3}], completion_ids=[[7, 8, 2]])
    assert seen["completion_ids"] == [[7, 8, 2]]


def test_conversational_prompts_get_message_completions_and_reach_the_chat_template(
    tmp_path, tiny_model_path
):
    rows = [
        {"prompt": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Greet."}]},
        {"prompt": [{"role": "user", "content": "Count to 3."}]},
    ]
    data = tmp_path / "chat.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    task = FunctionTask(train=DataSource(path=str(data)), reward_funcs=[format_reward])
    loaded = task.load("train")
    assert loaded == rows
    assert [s.reward for s in task.score_many(["A: hi", "1 2 3"], loaded)] == [1.0, 0.0]

    module = ReasoningModule(model=str(tiny_model_path), task=task)
    assert module.format_prompt(loaded[0]).startswith("Be brief.\n") and "Greet." in module.format_prompt(
        loaded[0]
    )
    module.tokenizer.chat_template = (
        "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}"
    )
    assert module.format_prompt(loaded[0]) == "<system>Be brief.<user>Greet.<assistant>"
    assert module.format_prompt(loaded[1]) == "<user>Count to 3.<assistant>"


def test_functions_by_import_path_and_bad_settings():
    assert resolve_reward_func("tests.tasks.test_function.exact") is exact
    assert resolve_reward_func("tests.tasks.test_function:reward_len") is reward_len
    with pytest.raises(ConfigError, match="cannot import 'no_such_module.f'"):
        FunctionTask(reward_funcs=["no_such_module.f"])
    with pytest.raises(ConfigError, match="2 reward_weights for 1 reward_funcs"):
        FunctionTask(reward_funcs=[exact], reward_weights=[1.0, 2.0])
    with pytest.raises(ConfigError, match="at least one reward function"):
        FunctionTask(reward_funcs=[])
    with pytest.raises(ValueError, match="returned 1 rewards for 2 completions"):
        FunctionTask(reward_funcs=[lambda completions, **kw: [1.0]]).score_many(
            ["a", "b"], [{"prompt": "x"}] * 2
        )


def test_a_task_serves_as_a_trl_reward_function():
    """GSM8K's verifier called exactly as TRL's GRPOTrainer calls a reward function."""
    task = GSM8K()
    rows = [
        {"question": "What is 2+3?", "answer": "2+3=5\n#### 5"},
        {"question": "What is 4*2?", "answer": "4*2=8\n#### 8"},
    ]
    kwargs = {
        "prompts": [r["question"] for r in rows],
        "completions": ["2+3 is 5. The answer is 5.", "#### 9"],
        "completion_ids": [[1, 2, 3], [4, 5]],
        "trainer_state": object(),  # TRL passes its TrainerState
        "log_extra": lambda *a: None,
        "log_metric": lambda *a: None,
        "answer": [r["answer"] for r in rows],
        "question": [r["question"] for r in rows],
    }
    expected = [task.score(c, r).reward for c, r in zip(kwargs["completions"], rows)]
    assert task.reward_fn(**kwargs) == expected == [1.0, 0.0]
    conversational = [[{"role": "assistant", "content": c}] for c in kwargs["completions"]]
    assert task.reward_fn(**{**kwargs, "completions": conversational}) == expected


def test_a_column_only_a_reward_function_takes_is_checked_when_the_data_is_loaded(tmp_path):
    """``graded`` takes ``answer``: a file without that column fails at load, naming the row, the
    function and the column, before any engine starts; a parameter with a default is no column."""

    def graded(prompts, completions, answer, unit="", *args, **kwargs):
        return [0.0] * len(completions)

    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"Say {i}", "solution": str(i)}) + "\n" for i in range(3)))
    task = FunctionTask(train=DataSource(path=str(data)), reward_funcs=[reward_len, graded])
    with pytest.raises(ConfigError) as raised:
        task.load("train")
    message = str(raised.value)
    assert "line 1" in message and "lacks column(s) ['answer']" in message, message
    assert "reward function graded takes" in message and "['prompt', 'solution']" in message, message
    data.write_text(
        json.dumps({"prompt": "Say 7", "answer": "7"}) + "\n" + json.dumps({"prompt": "Say 8"}) + "\n"
    )
    assert len(task.load("train")) == 2  # a null answer is the function's to handle (it may return None)
