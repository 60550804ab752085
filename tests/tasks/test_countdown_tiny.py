import json
from collections import Counter

import pytest

from es_lightning.tasks import CountdownTiny, DataSource, get_task
from es_lightning.tasks.countdown_tiny import (
    check,
    classify,
    extract_expression,
    solution_expression,
    solutions,
    worked_solution,
)

ROW = {"nums": [4, 8, 2], "target": 10}


def _key(row):
    return tuple(sorted(row["nums"])), row["target"]


def test_solutions_of_a_hand_worked_problem():
    paths = solutions((2, 4, 8), 400)[10]
    texts = sorted(worked_solution(ROW["nums"], path) for path in paths)
    assert texts == [
        "4-2=2\n8+2=10\nA: 8+(4-2)",
        "4/2=2\n8+2=10\nA: 8+(4/2)",
        "8+4=12\n12-2=10\nA: (8+4)-2",
        "8-2=6\n6+4=10\nA: (8-2)+4",
    ]
    # larger number first, positive differences, exact quotients, results within max_value
    assert solutions((3, 5), 400) == {
        8: (((5, "+", 3, 8),),),
        15: (((5, "*", 3, 15),),),
        2: (((5, "-", 3, 2),),),
    }
    assert solutions((2, 2), 400) == {4: (((2, "+", 2, 4),), ((2, "*", 2, 4),)), 1: (((2, "/", 2, 1),),)}
    assert 15 not in solutions((3, 5), 14)


def test_every_path_of_a_problem_scores_one():
    task = CountdownTiny()
    for row in task.load("test")[:50]:
        for path in solutions(tuple(sorted(row["nums"])), task.max_value)[row["target"]]:
            score = task.score(worked_solution(row["nums"], path), row)
            assert (score.reward, score.answer) == (1.0, str(row["target"])), (row, path)


def test_solution_expression_parenthesises_each_intermediate_result():
    assert solution_expression([3, 5, 7], ((5, "*", 3, 15), (15, "+", 7, 22))) == "(5*3)+7"
    four = ((12, "-", 2, 10), (10, "*", 3, 30), (30, "+", 1, 31))
    assert solution_expression([2, 3, 12, 1], four) == "((12-2)*3)+1"
    pairs = ((8, "+", 2, 10), (5, "-", 3, 2), (10, "*", 2, 20))
    assert solution_expression([8, 2, 5, 3], pairs) == "(8+2)*(5-3)"
    with pytest.raises(ValueError, match="leave 2 numbers"):
        solution_expression([8, 2, 5], ((8, "+", 2, 10),))


def test_generator_is_seeded_and_splits_are_disjoint():
    task = CountdownTiny(n_train=300, n_test=100, seed=3)
    train, test = task.load("train"), task.load("test")
    assert train == CountdownTiny(n_train=300, n_test=100, seed=3).load("train")
    assert test == CountdownTiny(n_train=300, n_test=100, seed=3).load("test")
    assert test != CountdownTiny(n_train=300, n_test=100, seed=4).load("test")
    assert (len(train), len(test)) == (300, 100)
    assert len({_key(r) for r in train}) == 300 and len({_key(r) for r in test}) == 100
    assert not {_key(r) for r in train} & {_key(r) for r in test}
    assert CountdownTiny(n_test=50, seed=3).load("test") == test[:50]  # a prefix of a larger split


def test_validation_split_follows_the_test_problems_and_stays_out_of_train():
    task = CountdownTiny(n_train=300, n_validation=80, n_test=100, seed=3)
    stream = CountdownTiny(n_test=480, n_validation=0, seed=3).load("test")  # the stream's first 480
    assert task.load("test") == stream[:100] and task.load("validation") == stream[100:180]
    assert task.load("train") == stream[180:480]
    keys = [{_key(r) for r in task.load(split)} for split in ("train", "validation", "test")]
    assert not keys[0] & keys[1] and not keys[1] & keys[2] and not keys[0] & keys[2]


def test_default_validation_problems_are_unseen_by_the_warm_start():
    """es-lightning/tiny-countdown trained on CountdownTiny(seed=0, n_test=1000).load("train"): the
    stream after its first 1,000 problems (scripts.warmstart.countdown.training_task); the
    default test and validation splits must lie within those 1,000."""
    from scripts.warmstart.countdown import training_task

    held = CountdownTiny(n_test=1000, n_validation=0, seed=0).load("test")
    task = CountdownTiny(seed=0)  # the defaults: n_test 200, n_validation 200
    assert task.load("test") == held[:200] and task.load("validation") == held[200:400]
    warm_start = training_task(n_problems=300)  # its data, shortened: the first 300 of 30,000
    stream = CountdownTiny(n_test=1300, n_validation=0, seed=0).load("test")
    assert warm_start.load("train") == stream[1000:]  # starts right after the held-out 1,000
    assert not {_key(r) for r in warm_start.load("train")} & {_key(r) for r in held}


def test_every_generated_problem_is_solvable_in_several_ways():
    task = CountdownTiny(n_train=500, n_test=200)
    for row in task.load("train") + task.load("test"):
        assert len(row["nums"]) in (3, 4) and all(1 <= n <= task.max_number for n in row["nums"])
        assert 1 <= row["target"] <= task.max_target
        paths = solutions(tuple(sorted(row["nums"])), task.max_value)[row["target"]]
        assert row["num_solutions"] == len(paths) >= task.min_solutions == 2
        assert task.score(f"A: {row['solution']}", row).reward == 1.0


def test_difficulty_is_spread():
    rows = CountdownTiny(n_test=200).load("test")
    sizes = Counter(len(r["nums"]) for r in rows)
    assert sizes[3] >= 50 and sizes[4] >= 90  # 60% of problems have 4 numbers
    paths = sorted(r["num_solutions"] for r in rows)
    assert paths[0] == 2 and sum(p == 2 for p in paths) >= 30 and paths[-1] >= 30
    assert any(max(r["nums"]) <= 9 for r in rows) and any(min(r["nums"]) >= 10 for r in rows)
    assert len({r["target"] for r in rows}) >= 60


@pytest.mark.parametrize(
    "completion",
    [
        "8-2=6\n6+4=10\nA: (8-2)+4",
        "8+4=12\n12-2=10\nA: (8+4)-2",
        "A: 8+(4-2)",
        "A: 8+4/2",
        "A: 4/2+8",
        "A: (4-2)+8",
        "A:8+4-2",
        "A:  8 + 4 - 2  \n",
        "A: (8+4)-2=10",  # the value after `=` is ignored
        "A: 8 + 4 ÷ 2",
        "A: -(2-4)+8",
        "A: 10\nA: 8+4-2",  # the last A: counts
        "some working\nnot checked\nA: 8+4-2\nmore text",
    ],
)
def test_any_valid_expression_scores_one(completion):
    score = CountdownTiny().score(completion, ROW)
    assert (score.reward, score.answer, score.extra) == (1.0, "10", {"valid_expression": 1.0})
    assert classify(completion, ROW) == "correct"


@pytest.mark.parametrize(
    ("completion", "verdict", "answer"),
    [
        ("8-2=6\n6*4=24\nA: (8-2)*4", "wrong_value", "24"),
        ("8-2=6\n6+4=11\nA: (8-2)+4", "correct", "10"),  # working lines are not checked
        ("A: 8/4+2", "wrong_value", "4"),
        ("A: 8/(4*2)", "wrong_value", "1"),
        ("A: (8+2)/4", "wrong_value", "5/2"),
        ("A: 8+2", "wrong_numbers", None),  # 4 left out
        ("A: 8+4-2+2-2", "wrong_numbers", None),  # 2 used three times
        ("A: 8+4-2-0", "wrong_numbers", None),
        ("A: 10", "wrong_numbers", None),
        ("A: 6+4", "wrong_numbers", None),  # an intermediate result is no given number
        ("A: 8/(4-4)", "malformed", None),
        ("A: 8+4.0-2", "malformed", None),
        ("A: abs(8+4-2)", "malformed", None),
        ("A: 8+4-2)", "malformed", None),
        ("A: __import__('os').system('true')", "malformed", None),
        ("A: 2**4-8+2", "malformed", None),
        ("A: " + "(" * 300 + "8+4-2" + ")" * 300, "malformed", None),
        ("A:", "no_answer", None),
        ("A: =10", "no_answer", None),
        ("8-2=6\n6+4=10", "no_answer", None),
        ("", "no_answer", None),
        ("a: 8+4-2", "no_answer", None),
    ],
)
def test_wrong_and_malformed_completions(completion, verdict, answer):
    score = CountdownTiny().score(completion, ROW)
    assert classify(completion, ROW) == verdict
    assert score.reward == float(verdict == "correct")
    assert score.answer == answer
    assert score.extra == {"valid_expression": float(verdict in ("correct", "wrong_value"))}


def test_numbers_given_twice_are_used_twice():
    row = {"nums": [5, 5, 2], "target": 20}
    task = CountdownTiny()
    assert task.score("A: (5+5)*2", row).reward == 1.0
    assert task.score("A: 5*2*2", row).reward == 0.0
    assert classify("A: 5*2*2", row) == "wrong_numbers"


def test_check_returns_the_exact_value():
    verdict, value = check("A: (8+2)/4", ROW)
    assert verdict == "wrong_value" and value.numerator == 5 and value.denominator == 2
    assert check("nothing", ROW) == ("no_answer", None)


@pytest.mark.parametrize(
    ("completion", "expected"),
    [("x\nA: 8+4-2\n", "8+4-2"), ("A: 1\nA: (8+4)-2 = 10 yes", "(8+4)-2"), ("A:  \n", None), ("none", None)],
)
def test_extract_expression(completion, expected):
    assert extract_expression(completion) == expected


def test_prompt_and_registration():
    task = get_task("countdown_tiny", max_number=9, n_train=3)
    assert isinstance(task, CountdownTiny) and task.max_number == 9 and task.n_train == 3
    assert task.question(ROW) == "4 8 2 -> 10"
    assert task.prompt(ROW) == "Q: 4 8 2 -> 10"
    assert all(ord(ch) < 128 for row in task.load("test")[:20] for ch in task.prompt(row) + row["solution"])


def test_rows_from_a_data_source(tmp_path):
    path = tmp_path / "test.jsonl"
    path.write_text(json.dumps(ROW) + "\n")
    task = CountdownTiny(test=DataSource(path=str(path)), n_train=20)
    assert task.load("test") == [ROW]
    assert task.score("A: 8+4-2", task.load("test")[0]).reward == 1.0
    assert len(task.load("train")) == 20
    assert _key(ROW) not in {_key(r) for r in task.load("train")}


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_number": 0}, "max_number must be at least 1"),
        ({"min_solutions": 0}, "min_solutions must be at least 1"),
        ({"max_target": 100, "max_value": 50}, "max_value must be at least 100"),
        ({"four_number_fraction": 1.5}, "four_number_fraction must be in"),
        ({"n_train": -1}, "n_train must be at least 0"),
    ],
)
def test_bad_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        CountdownTiny(**kwargs)


def test_too_many_problems_asked_for():
    with pytest.raises(ValueError, match="distinct problems"):
        CountdownTiny(max_number=2, four_number_fraction=0.0, n_test=50).load("test")
    with pytest.raises(ValueError, match="unknown split"):
        CountdownTiny().load("valid")
