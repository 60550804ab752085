import json
import time
from fractions import Fraction

import pytest

from es_lightning.tasks import Countdown, DataSource
from es_lightning.tasks.countdown import evaluate, extract_expression


def test_generation_is_deterministic_per_seed():
    first = Countdown(seed=1, n_train=40, n_test=10)
    assert first.load("train") == Countdown(seed=1, n_train=40, n_test=10).load("train")
    assert first.load("test") == Countdown(seed=1, n_train=40, n_test=10).load("test")
    assert first.load("test") != Countdown(seed=2, n_train=40, n_test=10).load("test")


def test_splits_have_the_asked_sizes_and_do_not_overlap():
    task = Countdown(seed=0, n_train=200, n_test=50)
    train, test = task.load("train"), task.load("test")
    assert (len(train), len(test)) == (200, 50)
    key = lambda r: (tuple(sorted(r["nums"])), r["target"])  # noqa: E731
    assert not {key(r) for r in train} & {key(r) for r in test}
    assert len({key(r) for r in train}) == 200


@pytest.mark.parametrize(("num_numbers", "max_number"), [(3, 10), (4, 100), (6, 25)])
def test_every_generated_problem_is_solvable(num_numbers, max_number):
    task = Countdown(num_numbers=num_numbers, max_number=max_number, n_train=100, n_test=20, seed=3)
    for row in task.load("train") + task.load("test"):
        assert len(row["nums"]) == num_numbers
        assert all(1 <= n <= max_number for n in row["nums"])
        assert 1 <= row["target"] <= task.max_target
        assert evaluate(row["solution"], row["nums"]) == row["target"]
        score = task.score(f"Let me think.\n<answer>{row['solution']}</answer>", row)
        assert (score.reward, score.answer) == (1.0, str(row["target"]))


ROW = {"nums": [3, 5, 7, 2], "target": 16}


@pytest.mark.parametrize(
    "expression",
    [
        "__import__('os')",
        "__import__('os').system('true') or 16",
        "x + 9",
        "abs(16)",
        "(7).real + 9",
        "2 ** 4",
        "7 + 3 + 3 + 3",  # reuses 3
        "8 * 2",  # 8 is not given
        "1.5 * 2",
        "True + 15",
        "[16][0]",
        "7 + 3 ; 16",
        "lambda: 16",
        "7 // 2",
        "7 if 3 else 5",
    ],
)
def test_parser_rejects_everything_but_arithmetic_over_the_given_numbers(expression):
    with pytest.raises(ValueError):
        evaluate(expression, ROW["nums"])
    assert Countdown().score(f"<answer>{expression}</answer>", ROW).reward == 0.0


def test_correct_expressions_and_exact_division():
    task = Countdown()
    assert task.score("<answer>(3 + 5) * 2</answer>", ROW).reward == 1.0  # not all numbers needed
    assert task.score("<answer>(7 - 5) × (3 + 5)</answer>", ROW).reward == 0.0  # 5 used twice
    assert task.score("<answer>-(3 - 5) * 7 + 2</answer>", ROW).reward == 1.0
    assert evaluate("1 / 49 * 49", [1, 49, 49]) == 1  # a float would give 0.9999999999999999
    assert task.score("<answer>1 / 49 * 49</answer>", {"nums": [1, 49, 49], "target": 1}).reward == 1.0
    assert evaluate("7 / 2", [7, 2]) == Fraction(7, 2)
    assert task.score("<answer>7 / 2</answer>", {"nums": [7, 2], "target": 3}).reward == 0.0
    zero = task.score("<answer>5 / (3 - 3)</answer>", {"nums": [5, 3, 3], "target": 5})
    assert (zero.reward, zero.answer) == (0.0, None)


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("<answer>1 + 2</answer> then <answer>(3 + 5) * 2 = 16</answer>", "(3 + 5) * 2"),
        ("Trying things.\n(3 + 5) * 2\nThat makes 16.", "(3 + 5) * 2"),
        ("work\n$ (3+5)*2 $\n", "(3+5)*2"),
        ("(3 + 5) * 2 = 16", None),  # lines with `=` are no bare expression
        ("The answer is sixteen.", None),
    ],
)
def test_extract_expression(completion, expected):
    assert extract_expression(completion) == expected


def test_majority_vote_answer_is_the_value():
    task = Countdown()
    a = task.score("<answer>(3 + 5) * 2</answer>", ROW)
    b = task.score("<answer>7 + 5 + 2 * 2</answer>", {"nums": [7, 5, 2, 2], "target": 16})
    assert a.answer == b.answer == "16"
    assert task.score("<answer>7 / 2</answer>", ROW).answer == "7/2"


def test_rows_from_a_data_source(tmp_path):
    path = tmp_path / "countdown.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [ROW, {"nums": [1, 2], "target": 3}]))
    task = Countdown(test=DataSource(path=str(path)), n_train=30)
    rows = task.load("test")
    assert rows[0]["nums"] == [3, 5, 7, 2]
    assert "[3, 5, 7, 2]" in task.prompt(rows[0]) and "16" in task.prompt(rows[0])
    assert len(task.load("train")) == task.n_train  # train is still generated


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="num_numbers"):
        Countdown(num_numbers=1)
    with pytest.raises(ValueError, match="split"):
        Countdown().load("valid")
    with pytest.raises(ValueError, match="distinct problems"):
        Countdown(num_numbers=2, max_number=1, n_train=5, n_test=5).load("train")


def test_long_lines_are_fast():
    start = time.monotonic()
    assert extract_expression("1" * 20000 + "x\nno expression here") is None
    assert time.monotonic() - start < 1.0
