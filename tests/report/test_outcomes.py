"""Per-problem outcomes from the completions files evaluations write (real writer, real reader)."""

from __future__ import annotations

import numpy as np

from es_lightning.evaluation.offline import write_completions_file
from es_lightning.report.outcomes import (
    aligned,
    collect_outcomes,
    completions_file,
    problem_id,
    read_outcomes,
    run_outcomes,
)
from tests.report.synthetic import (
    TASK,
    summary,
    training_metrics,
    write_outcomes,
    write_pipeline,
    write_single,
)

ROWS = [
    {"question": "1+1", "answer": "2"},
    {"question": "2+2", "answer": "4"},
    {"question": "1+1", "answer": "2"},
]


def test_counts_from_the_evaluations_own_writer(tmp_path):
    path = write_completions_file(
        tmp_path / "after_arithmetic_completions.jsonl",
        ROWS,
        [["a", "b", "c"]] * 3,
        greedy=["g"] * 3,
        rewards=[[1.0, 0.0, 1.0], [0.0, 0.0, 0.0], [1.0, 0.5, 0.999999999999]],
        greedy_rewards=[1.0, 0.0, 1.0],
    )
    outcomes = read_outcomes(path)
    assert outcomes.m == 3
    assert outcomes.counts == [2, 0, 2]  # 0.5 is partial credit, not correct; 1 − 1e-12 is
    first, second, third = outcomes.problems
    assert first == problem_id(ROWS[0]) and third == f"{first}#2"  # a repeated row is numbered
    assert second != first
    assert outcomes.greedy == [1, 0, 1]  # each greedy answer's reward by the same rule


def test_greedy_outcomes_need_a_greedy_reward_on_every_row(tmp_path):
    rewards = [[1.0]] * 3
    path = write_completions_file(
        tmp_path / "g.jsonl", ROWS, [["a"]] * 3, ["g"] * 3, rewards, [0.5, float("nan"), 1.0]
    )
    assert read_outcomes(path).greedy == [0, 0, 1]  # partial credit and a non-finite (null) reward fail
    assert (
        read_outcomes(write_completions_file(tmp_path / "n.jsonl", ROWS, [["a"]] * 3, rewards=rewards)).greedy
        is None
    )


def test_without_rewards_there_are_no_outcomes(tmp_path):
    path = write_completions_file(tmp_path / "x.jsonl", ROWS, [["a"]] * 3)
    assert read_outcomes(path) is None
    assert read_outcomes(None) is None
    assert completions_file(tmp_path, "after", "arithmetic") is None


def test_methods_are_paired_by_problem_not_by_line(tmp_path):
    write_outcomes(tmp_path / "a", "after", np.array([3, 1, 0, 2]))
    write_outcomes(tmp_path / "b", "after", np.array([3, 1, 0, 2]), order=[2, 0, 3, 1])
    a = read_outcomes(completions_file(tmp_path / "a", "after", TASK))
    b = read_outcomes(completions_file(tmp_path / "b", "after", TASK))
    assert b.counts == [0, 3, 2, 1]
    assert aligned(b, a.problems, 32) == [3, 1, 0, 2]
    assert "other problems" in aligned(
        read_outcomes(completions_file(tmp_path / "a", "after", TASK)), ["x"], 32
    )
    assert "samples per problem" in aligned(a, a.problems, 16)
    block = collect_outcomes({"base": {0: a}, "es": {0: b, 1: None}}, TASK)
    assert block["counts"] == {"base": {"0": [3, 1, 0, 2]}, "es": {"0": [3, 1, 0, 2]}}
    assert block["missing"] == {"es": "seed 1: no completions with rewards"}
    assert block["greedy"] == {}  # no greedy pass
    greedy = np.array([1, 0, 0, 1])
    write_outcomes(tmp_path / "c", "after", np.array([3, 1, 0, 2]), order=[2, 0, 3, 1], greedy=greedy)
    c = read_outcomes(completions_file(tmp_path / "c", "after", TASK))
    assert c.greedy == [0, 1, 1, 0]  # in the file's order
    block = collect_outcomes({"base": {0: a}, "grpo": {0: c, 1: c}}, TASK)
    assert block["greedy"] == {"grpo": {"0": [1, 0, 0, 1], "1": [1, 0, 0, 1]}}  # in the problems' order


def test_run_outcomes_of_single_runs_and_pipelines(tmp_path):
    rng = np.random.default_rng(0)
    before, after = np.array([1, 2]), np.array([3, 4])
    write_single(
        tmp_path / "single",
        summary(0.4, rng),
        summary(0.5, rng),
        training_metrics(rng, 2, 0.0),
        before_counts=before,
        after_counts=after,
    )
    write_pipeline(
        tmp_path / "pipe",
        ["es", "grpo"],
        [1, 1],
        summary(0.4, rng),
        summary(0.5, rng),
        [[], []],
        before_counts=before,
        after_counts=after,
    )
    for run in ("single", "pipe"):
        assert run_outcomes(tmp_path / run, "before", TASK).counts == [1, 2]
        assert run_outcomes(tmp_path / run, "after", TASK).counts == [3, 4]
