import re

import pytest

from es_lightning.tasks import GSM8K, DataSource
from es_lightning.tasks.gsm8k import extract_answer, normalize_number
from tests.helpers import ASSETS

GSM8K_ROWS = {"test.jsonl": 44, "train.jsonl": 22}
"""Rows per vendored file: the first of each split, then answers with separators or a minus sign."""


@pytest.fixture(scope="module", params=sorted(GSM8K_ROWS))
def real_rows(request):
    rows = DataSource(path=str(ASSETS / "gsm8k" / request.param)).load()
    assert len(rows) == GSM8K_ROWS[request.param]
    return rows


def test_gold_solutions_score_one(real_rows):
    task = GSM8K()
    golds = {row["answer"].rsplit("####", 1)[1].strip() for row in real_rows}
    assert any("," in g for g in golds)  # answers written with a thousands separator
    rewards = [task.score(row["answer"], row).reward for row in real_rows]
    assert rewards == [1.0] * len(real_rows)


def test_gold_number_without_marker_scores_one_and_wrong_number_zero(real_rows):
    task = GSM8K()
    for row in real_rows:
        solution, gold = row["answer"].rsplit("####", 1)
        gold = gold.strip()
        plain = f"{solution}\nSo the answer is {gold}."
        assert task.score(plain, row).reward == 1.0, plain
        wrong = str(int(gold.replace(",", "")) + 1)
        assert task.score(f"{solution}\n#### {wrong}", row).reward == 0.0


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1,234.00", "1234"),
        ("$5", "5"),
        ("-3.50", "-3.5"),
        ("42.", "42"),
        ("7.0", "7"),
        (" 1 000 ", "1000"),
        ("-0", "0"),
        ("0.25", "0.25"),
        ("eighteen", "eighteen"),
        ("18.0000000000000000000000000001", "18.0000000000000000000000000001"),  # 30 digits, not 28
        ("18.00000000000000000000000000000000", "18"),
        ("1e99999", "1E+99999"),  # scientific: 1e999999999 in plain notation would be a gigabyte
    ],
)
def test_normalize_number(raw, expected):
    assert normalize_number(raw) == expected


def test_an_answer_equal_to_the_gold_only_to_28_digits_is_wrong():
    task = GSM8K()
    row = {"question": "q", "answer": "so #### 18"}
    assert task.score("#### 18.0000000000000000000000000001", row).reward == 0.0
    assert task.score("#### 17.9999999999999999999999999999999", row).reward == 0.0
    assert task.score("#### 18.000000000000000000000000000000", row).reward == 1.0


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("so 6 * 7 = 42\n#### 42.", "42"),
        ("#### $1,000.00 dollars", "1000"),
        ("first 3 then 5", "5"),
        ("#### 3\nwait, recheck\n#### 4", "4"),
        ("#### 7\nchecked with 9 other ways", "7"),
        ("10-3=7", "7"),
        ("the temperature is -5 degrees", "-5"),
        ("it costs $18.50.", "18.5"),
        ("no numbers at all", None),
        ("#### ", None),
    ],
)
def test_extract_answer(completion, expected):
    assert extract_answer(completion) == expected


def test_numeric_comparison_and_answer_string():
    task = GSM8K()
    row = {"question": "q", "answer": "work\n#### 1,800"}
    score = task.score("The total is $1,800.00", row)
    assert (score.reward, score.answer) == (1.0, "1800")
    assert task.score("#### 18.00", {"question": "q", "answer": "#### 18"}).reward == 1.0
    assert task.score("#### 180", row).reward == 0.0
    assert task.score("I don't know", row).answer is None


def test_gold_without_answer_is_a_clear_error():
    with pytest.raises(ValueError, match="gives no answer"):
        GSM8K().score("#### 3", {"question": "q", "answer": "no number here"})


def test_prompt_and_defaults():
    task = GSM8K()
    assert (task.train.path, task.train.name, task.train.split) == ("openai/gsm8k", "main", "train")
    assert (task.test.path, task.test.split) == ("openai/gsm8k", "test")
    prompt = task.prompt({"question": "What is 2+2?", "answer": "#### 4"})
    assert prompt.startswith("What is 2+2?") and "####" in prompt


def test_reward_fn_trl_signature():
    task = GSM8K()
    rewards = task.reward_fn(
        ["... #### 18", "... #### 5", "nothing"],
        question=["a", "b", "c"],
        answer=["x\n#### 18", "y\n#### 6", "z\n#### 1"],
    )
    assert rewards == [1.0, 0.0, 0.0]


def test_load_real_split_via_task():
    path = ASSETS / "gsm8k" / "test.jsonl"
    rows = GSM8K(test=DataSource(path=str(path), limit=5)).load("test")
    assert len(rows) == 5 and all(re.search(r"####", r["answer"]) for r in rows)
