"""Evaluation files are strict JSON, and a non-finite reward is never a solve."""

from __future__ import annotations

import json
import math

import pytest

from es_lightning.evaluation.offline import finite_or_none, strict_dumps
from es_lightning.evaluation.runner import EvalResult
from es_lightning.evaluation.summary import is_correct, summarize
from es_lightning.tasks.base import Score
from es_lightning.training.eval_sets import write_eval_outputs


def _strict_loads(text: str):
    """``json.loads`` that refuses NaN / Infinity, as a strict JSON reader does."""

    def refuse(constant: str):
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def test_non_finite_numbers_become_null_at_any_depth():
    value = {"a": math.nan, "b": [1.0, math.inf, {"c": -math.inf}], "d": (2, "x"), "e": None}
    assert finite_or_none(value) == {"a": None, "b": [1.0, None, {"c": None}], "d": [2, "x"], "e": None}
    assert _strict_loads(strict_dumps(value)) == finite_or_none(value)
    with pytest.raises(ValueError):
        _strict_loads(json.dumps(value))  # what the default writes is not JSON


@pytest.mark.parametrize(
    ("reward", "solved"),
    [(1.0, True), (1 - 1e-10, True), (0.99, False), (math.nan, False), (math.inf, False), (-math.inf, False)],
)
def test_only_a_finite_reward_at_one_is_a_solve(reward, solved):
    assert is_correct(Score(reward=reward, answer=None)) is solved


def test_an_infinite_reward_does_not_raise_pass_at_k():
    scores = [[Score(math.inf, "a"), Score(0.0, "b")], [Score(1.0, "c"), Score(math.nan, "d")]]
    summary = summarize(scores, ks=[1, 2])
    assert summary["pass@2"] == 0.5  # prompt 0 has no finite solve; prompt 1 has one of two
    assert summary["pass@1"] == 0.25


def test_write_eval_outputs_writes_strict_json(tmp_path):
    result = EvalResult(
        summary={"n_prompts": 1, "mean_reward": math.nan, "pass@1": 0.0},
        rows=[{"question": "q"}],
        completions=[["x"]],
        greedy=None,
        rewards=[[math.nan]],
    )
    write_eval_outputs(tmp_path, "after", "mine", result, split="test")
    assert _strict_loads((tmp_path / "after.json").read_text()) == {
        "mine": {"n_prompts": 1, "mean_reward": None, "pass@1": 0.0, "split": "test"}
    }
    line = (tmp_path / "after_mine_completions.jsonl").read_text().splitlines()[0]
    assert _strict_loads(line)["rewards"] == [None]
