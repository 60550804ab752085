import pytest

from es_lightning.tasks import Arithmetic, DataSource, get_task
from es_lightning.tasks.arithmetic import extract_answer, true_value, worked_solution

ROW = {"a": 12, "b": 7, "c": 5}


def _keys(rows):
    return [(r["a"], r["b"], r["c"]) for r in rows]


def test_generator_is_deterministic_and_well_formed():
    a, b = Arithmetic(seed=3), Arithmetic(seed=3)
    train, test = a.load("train"), a.load("test")
    assert train == b.load("train") and test == b.load("test")
    assert len(train) == 1000 and len(test) == 200
    assert all(set(row) == {"a", "b", "c"} for row in train + test)
    assert all(1 <= row[k] <= 30 for row in train + test for k in "abc")
    assert len(set(_keys(train))) == 1000 and len(set(_keys(test))) == 200  # no repeats within a split
    assert _keys(Arithmetic(seed=4).load("test")) != _keys(test)

    small = Arithmetic(max_number=5, n_train=7, n_validation=2, n_test=3, seed=3)
    assert len(small.load("train")) == 7 and len(small.load("test")) == 3
    assert all(1 <= row[k] <= 5 for row in small.load("train") + small.load("test") for k in "abc")


def test_splits_never_overlap_even_when_they_cover_every_problem():
    task = Arithmetic(seed=0)
    assert not set(_keys(task.load("train"))) & set(_keys(task.load("test")))
    full = Arithmetic(max_number=4, n_train=44, n_validation=10, n_test=10, seed=1)  # 4**3 = 64 in all
    train, validation, test = (set(_keys(full.load(split))) for split in ("train", "validation", "test"))
    assert (len(train), len(validation), len(test)) == (44, 10, 10)
    assert not train & test and not validation & test and not validation & train


def test_test_split_is_a_prefix_of_a_larger_one():
    assert Arithmetic(n_test=200).load("test") == Arithmetic(n_test=500).load("test")[:200]


def test_validation_split_follows_the_test_problems_in_their_stream():
    stream = Arithmetic(n_test=600, n_validation=0).load("test")
    task = Arithmetic(n_test=200, n_validation=300)
    assert task.load("validation") == stream[200:500]
    assert not set(_keys(task.load("validation"))) & set(_keys(task.load("train")))


def test_default_validation_problems_are_unseen_by_the_warm_start():
    """es-lightning/tiny-arithmetic trained on every problem but the first 1,000 of the test stream
    (scripts.warmstart.arithmetic.training_task): the default test and validation splits lie in those."""
    from scripts.warmstart.arithmetic import training_task

    task = Arithmetic(seed=0)
    held = set(_keys(Arithmetic(n_test=1000, n_validation=0).load("test")))
    warm_start = training_task()  # max_number 30, held_out 1000
    seen = set(_keys(warm_start.load("train")))
    assert len(seen) == 30**3 - 1000 and not seen & held
    for split in ("test", "validation"):
        assert set(_keys(task.load(split))) <= held and not set(_keys(task.load(split))) & seen


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_number": 0}, "max_number must be at least 1"),
        ({"n_train": -1}, "arithmetic: n_train must be at least 0, got -1"),
        ({"n_test": -2}, "arithmetic: n_test must be at least 0, got -2"),
        (
            {"max_number": 3, "n_train": 20, "n_validation": 0, "n_test": 8},
            r"28 generated problems \(n_train \+ n_validation \+ n_test\) exceed the 27 distinct ones",
        ),
        ({"n_validation": -1}, "arithmetic: n_validation must be at least 0, got -1"),
    ],
)
def test_bad_sizes_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Arithmetic(**kwargs)


def test_unknown_split_and_data_source(tmp_path):
    with pytest.raises(ValueError, match="unknown split 'valid'"):
        Arithmetic().load("valid")
    good, bad = tmp_path / "good.jsonl", tmp_path / "bad.jsonl"
    good.write_text('{"a": 1, "b": 2, "c": 3}\n')
    bad.write_text('{"x": 1}\n')
    assert Arithmetic(test=DataSource(path=str(good))).load("test") == [{"a": 1, "b": 2, "c": 3}]
    tiny = Arithmetic(test=DataSource(path=str(good)), max_number=3, n_train=26, n_validation=0)  # 27 in all
    assert {(1, 2, 3)} == {(a, b, c) for a in (1, 2, 3) for b in (1, 2, 3) for c in (1, 2, 3)} - set(
        _keys(tiny.load("train"))
    )  # generated train rows skip the file's test problem
    with pytest.raises(
        ValueError, match="only 26 with max_number=3 are not in the test and validation splits"
    ):
        Arithmetic(test=DataSource(path=str(good)), max_number=3, n_train=27, n_validation=0).load("train")
    with pytest.raises(ValueError, match="only 26 with max_number=3 are not in the test split"):
        Arithmetic(test=DataSource(path=str(good)), max_number=3, n_train=0, n_validation=27).load(
            "validation"
        )
    with pytest.raises(ValueError, match="lacks column"):
        Arithmetic(test=DataSource(path=str(bad))).load("test")


def test_prompt_target_and_registration():
    task = get_task("arithmetic", max_number=9, n_train=3)
    assert isinstance(task, Arithmetic) and task.max_number == 9 and task.n_train == 3
    assert task.question(ROW) == "12+7-5=?"
    assert task.prompt(ROW) == "Q: 12+7-5=?"
    assert worked_solution(ROW) == "12+7=19\n19-5=14\nA: 14"
    assert worked_solution({"a": 1, "b": 2, "c": 30}) == "1+2=3\n3-30=-27\nA: -27"
    assert true_value(ROW) == 14
    assert all(ord(ch) < 128 for ch in task.prompt(ROW) + worked_solution(ROW))


def test_worked_solution_scores_one_on_every_generated_row():
    task = Arithmetic(seed=0)
    for row in task.load("train") + task.load("test"):
        score = task.score(worked_solution(row), row)
        assert score.reward == 1.0 and score.answer == str(true_value(row))


@pytest.mark.parametrize(
    ("completion", "reward", "answer"),
    [
        ("12+7=19\n19-5=14\nA: 14", 1.0, "14"),
        ("A: 14", 1.0, "14"),
        ("A:14", 1.0, "14"),
        ("A:   +014  \n", 1.0, "14"),  # sign, leading zeros and spaces are normalised away
        ("A: 14\nQ: 3+4-5=?\n3+4=7", 1.0, "14"),  # rambling after the answer: the last A: counts
        ("A: 13\n...\nA: 14", 1.0, "14"),  # the last A: counts
        ("A: 14\nA: 13", 0.0, "13"),
        ("12+7=19\n19-5=13\nA: 13", 0.0, "13"),
        ("12+7=18\n18-5=14\nA: 14", 1.0, "14"),  # working lines are not checked
        ("A: 14.0", 0.0, None),
        ("A: 14 apples", 0.0, None),
        ("A: fourteen", 0.0, None),
        ("A:", 0.0, None),
        ("A: -", 0.0, None),
        ("12+7=19\n19-5=14\n14", 0.0, None),  # no A: at all
        ("a: 14", 0.0, None),
        ("", 0.0, None),
        ("A: " + "9" * 13, 0.0, None),  # absurdly long numbers are no answer
        ("A: \u0661\u0664", 0.0, None),  # non-ASCII digits are not integers here
    ],
)
def test_score(completion, reward, answer):
    score = Arithmetic().score(completion, ROW)
    assert (score.reward, score.answer) == (reward, answer)


def test_negative_answers():
    row = {"a": 1, "b": 2, "c": 30}
    task = Arithmetic()
    assert task.score("A: -27", row).reward == 1.0
    assert task.score("A: -27", row).answer == "-27"
    assert task.score("A: 27", row).reward == 0.0
    assert task.score("A: - 27", row).answer is None
    assert extract_answer("A: -0") == "0"
    assert task.score("A: -0", {"a": 1, "b": 2, "c": 3}).reward == 1.0


def test_reward_fn_signature():
    task = Arithmetic()
    rewards = task.reward_fn(["A: 14", "A: 2", "nothing"], a=[12, 1, 1], b=[7, 1, 1], c=[5, 1, 1])
    assert rewards == [1.0, 0.0, 0.0]
