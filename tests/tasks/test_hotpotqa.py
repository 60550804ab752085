import pytest

from es_lightning.tasks import HotpotQA
from es_lightning.tasks.hotpotqa import extract_answer, normalize_answer, token_f1

ROW = {"question": "Which tower is in Paris?", "answer": "the Eiffel Tower"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [("The  Eiffel Tower!", "eiffel tower"), ("An apple, a day.", "apple day"), ("U.S.A.", "usa")],
)
def test_normalize_answer(text, expected):
    assert normalize_answer(text) == expected


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("Step 1... Answer: wrong\nMore thought.\nAnswer: **Eiffel Tower**.", "Eiffel Tower."),
        ("reasoning\n\nEiffel Tower\n", "Eiffel Tower"),
        ("final answer: \\boxed{Paris}", "Paris"),
        ("", None),
    ],
)
def test_extract_answer(completion, expected):
    assert extract_answer(completion) == expected


def test_exact_match_and_f1():
    task = HotpotQA()
    exact = task.score("Reasoning.\nAnswer: Eiffel Tower.", ROW)
    assert (exact.reward, exact.answer, exact.extra["f1"]) == (1.0, "eiffel tower", 1.0)
    partial = task.score("Answer: Eiffel Tower in Paris", ROW)
    assert partial.reward == 0.0
    assert partial.extra["f1"] == pytest.approx(2 / 3)  # P = 2/4, R = 2/2
    assert task.score("Answer: Big Ben", ROW).extra["f1"] == 0.0


def test_yes_no_f1_needs_exact_match():
    assert token_f1("no", "yes") == 0.0
    assert token_f1("yes it is", "yes") == 0.0
    assert token_f1("Yes.", "yes") == 1.0


def test_context_in_prompt():
    task = HotpotQA()
    row = {
        **ROW,
        "context": {
            "title": ["Eiffel Tower", "Big Ben"],
            "sentences": [["A tower", " in Paris."], ["A clock."]],
        },
    }
    prompt = task.prompt(row)
    assert "Eiffel Tower: A tower in Paris." in prompt and "Big Ben: A clock." in prompt
    assert prompt.index("Big Ben") < prompt.index("Question: Which tower")
    assert task.prompt(ROW).startswith(ROW["question"])
    with pytest.raises(ValueError, match="context"):
        task.prompt({**ROW, "context": 5})


def test_reward_fn():
    rewards = HotpotQA().reward_fn(
        ["Answer: the eiffel tower", "Answer: Paris"], **{k: [v, v] for k, v in ROW.items()}
    )
    assert rewards == [1.0, 0.0]
