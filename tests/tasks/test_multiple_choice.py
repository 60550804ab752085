import pytest

from es_lightning.tasks import GPQA, CommonsenseQA, MultipleChoice
from es_lightning.tasks.multiple_choice import extract_letter


@pytest.mark.parametrize(
    ("completion", "n", "expected"),
    [
        ("Reasoning... The answer is (C).", 4, "C"),
        ("Answer: B", 4, "B"),
        ("**Answer:** D", 4, "D"),
        ("the correct answer is **A**", 4, "A"),
        ("so we get \\boxed{D}", 4, "D"),
        ("so we get $\\boxed{\\text{A}}$", 4, "A"),
        ("Thinking it through.\n\nB", 4, "B"),
        ("Thinking it through.\n(C)", 4, "C"),
        ("The answer is A. Wait, no: the answer is (D)", 4, "D"),
        ("Answer: B ... or maybe the answer is (F)", 4, "B"),  # F is beyond 4 options
        ("The answer is (E)", 5, "E"),
        ("The answer is (E)", 4, None),
        ("the answer is a bit unclear", 4, None),
        ("Answer: Carbon", 4, None),
        ("I think it is between A and B, hard to say", 4, None),
    ],
)
def test_extract_letter(completion, n, expected):
    assert extract_letter(completion, n) == expected


CSQA_ROW = {
    "question": "Where would you put a plate after washing it?",
    "choices": {"label": ["A", "B", "C", "D", "E"], "text": ["floor", "cupboard", "oven", "car", "bed"]},
    "answer": "B",
}


def test_csqa_row_prompt_and_score():
    task = CommonsenseQA()
    prompt = task.prompt(CSQA_ROW)
    assert "A. floor\nB. cupboard\nC. oven\nD. car\nE. bed" in prompt
    assert prompt.startswith(CSQA_ROW["question"])
    assert task.score("The answer is (B).", CSQA_ROW).reward == 1.0
    wrong = task.score("The answer is (C).", CSQA_ROW)
    assert (wrong.reward, wrong.answer) == (0.0, "C")
    assert task.score("no idea", CSQA_ROW).answer is None


@pytest.mark.parametrize(("answer", "gold"), [(2, "C"), ("C", "C"), ("oven", "C"), (" oven ", "C"), (0, "A")])
def test_gold_as_index_letter_or_text(answer, gold):
    task = MultipleChoice()
    row = {"question": "q", "choices": ["floor", "cupboard", "oven"], "answer": answer}
    assert task.score(f"The answer is ({gold})", row).reward == 1.0
    other = "B" if gold != "B" else "A"
    assert task.score(f"The answer is ({other})", row).reward == 0.0


def test_bad_rows_are_clear_errors():
    task = MultipleChoice()
    with pytest.raises(ValueError, match="'toaster'"):
        task.score("A", {"question": "q", "choices": ["x", "y"], "answer": "toaster"})
    with pytest.raises(ValueError, match="outside the 2 options"):
        task.score("A", {"question": "q", "choices": ["x", "y"], "answer": 5})
    with pytest.raises(ValueError, match="no 'choices' column"):
        task.score("A", {"question": "q", "answer": "A"})
    with pytest.raises(ValueError, match="together"):
        MultipleChoice(correct_column="Correct Answer")


def gpqa_row(i):
    return {
        "question": f"Question number {i}?",
        "Correct Answer": f"right {i}",
        "Incorrect Answer 1": f"wrong1 {i}",
        "Incorrect Answer 2": f"wrong2 {i}",
        "Incorrect Answer 3": f"wrong3 {i}",
    }


def test_gpqa_options_are_shuffled_deterministically():
    task = GPQA()
    golds = []
    for i in range(20):
        row = gpqa_row(i)
        texts, gold = task.options(row)
        assert sorted(texts) == sorted(v for k, v in row.items() if "Answer" in k)
        assert texts[gold] == f"right {i}"
        assert GPQA().options(row) == (texts, gold)  # the same order in a fresh instance
        letter = "ABCD"[gold]
        assert f"{letter}. right {i}" in task.prompt(row)
        assert task.score(f"The answer is ({letter})", row).reward == 1.0
        assert task.score(f"The answer is ({'ABCD'[(gold + 1) % 4]})", row).reward == 0.0
        golds.append(gold)
    assert len(set(golds)) > 1  # the correct option is not always A
    assert [GPQA(shuffle_seed=7).options(gpqa_row(i))[1] for i in range(20)] != golds


def test_default_sources():
    csqa = CommonsenseQA()
    assert (csqa.test.path, csqa.test.split, csqa.test.column_map) == (
        "tau/commonsense_qa",
        "validation",
        {"answerKey": "answer"},
    )
    assert csqa.train.split == "train"
    gpqa = GPQA()
    assert (gpqa.test.path, gpqa.test.name, gpqa.test.column_map) == (
        "Idavidrein/gpqa",
        "gpqa_diamond",
        {"Question": "question"},
    )
    assert gpqa.train is None
