import pytest

from es_lightning.tasks import Echo, get_task

ROW = {"digits": "4821"}


def test_generator_is_deterministic_and_well_formed():
    a, b = Echo(seed=3), Echo(seed=3)
    train = a.load("train")
    assert train == b.load("train")
    assert a.load("test") == b.load("test")
    assert len(train) == 256 and len(a.load("test")) == 64
    assert all(
        set(row) == {"digits"} and len(row["digits"]) == 4 and row["digits"].isdigit() for row in train
    )
    assert len({row["digits"] for row in train}) > 200  # varied, not one repeated string

    small = Echo(length=7, n_train=5, n_test=3, seed=3)
    assert len(small.load("train")) == 5 and len(small.load("test")) == 3
    assert all(len(row["digits"]) == 7 for row in small.load("train") + small.load("test"))


def test_splits_and_seeds_use_different_streams():
    task = Echo(length=12, n_train=200, n_test=50, seed=0)
    train = [r["digits"] for r in task.load("train")]
    test = [r["digits"] for r in task.load("test")]
    assert test != train[:50]
    assert not set(train) & set(test)  # 10**12 strings: disjoint unless both splits draw the same stream

    other = [r["digits"] for r in Echo(length=12, n_train=200, n_test=50, seed=1).load("train")]
    assert not set(train) & set(other)


def test_validation_shares_no_string_with_train_or_test():
    task = Echo(length=2, n_train=300, n_validation=40, n_test=64, seed=0)  # 100 strings: splits crowd
    train, validation, test = ({r["digits"] for r in task.load(s)} for s in ("train", "validation", "test"))
    assert len(task.load("validation")) == 40 and len(task.load("train")) == 300
    assert train & test  # train and test may share strings (drawn independently) ...
    assert not validation & test and not validation & train  # ... the validation split never does
    assert Echo(length=2, n_train=300, n_validation=0, n_test=64).load("validation") == []


def test_a_validation_split_with_no_string_left_is_refused():
    with pytest.raises(
        ValueError, match="echo: the test split holds every 1-digit string; no validation row"
    ):
        Echo(length=1, n_test=64).load("validation")
    with pytest.raises(ValueError, match="echo: the test split holds every 1-digit string"):
        Echo(length=1, n_test=64).load("train")  # train skips the validation strings, so it needs them
    assert len(Echo(length=1, n_test=64, n_validation=0).load("train")) == 256


def test_unknown_split_is_an_error():
    with pytest.raises(ValueError, match="unknown split 'valid'"):
        Echo().load("valid")


def test_prompt_and_registration():
    task = get_task("echo", length=2, n_train=3)
    assert isinstance(task, Echo) and task.length == 2 and task.n_train == 3
    assert task.question(ROW) == "4821"
    assert task.prompt(ROW) == "Repeat: 4821\n"
    assert Echo(prompt_template="Echo {question}!").prompt(ROW) == "Echo 4821!"


@pytest.mark.parametrize(
    ("completion", "reward", "answer"),
    [
        ("4821", 1.0, "4821"),
        ("4829", 0.5 * 1 + 0.5 * 0.75, "4829"),  # all digits, 3 of 4 in place
        ("1234", 0.5, "1234"),  # digits, none in place
        ("48ab", 0.5 * 0.5 + 0.5 * 0.5, "48ab"),
        ("48", 0.5 * 0.5 + 0.5 * 0.5, "48"),  # short answers lose the missing positions
        ("48211111", 1.0, "48211111"),  # only the first L characters count
        ("x4821", 0.5 * 0.75 + 0.5 * 0.0, "x4821"),  # shifted by one: 3 digits in the first 4, no hits
        ("4 8 2 1", 0.5 * 0.5 + 0.5 * 0.25, "4 8 2 1"),  # "4 8 " : 2 digits, 1 hit
        ("\n\n4821\n0000", 1.0, "4821"),  # leading newlines dropped; only the first line counts
        ("abcd\n4821", 0.0, "abcd"),
        ("", 0.0, None),
        ("\n", 0.0, None),
    ],
)
def test_reward_hand_cases(completion, reward, answer):
    score = Echo().score(completion, ROW)
    assert score.reward == pytest.approx(reward, abs=1e-12)
    assert score.answer == answer


@pytest.mark.parametrize(
    ("weight", "completion", "reward"),
    [
        (0.0, "1234", 0.0),  # content only
        (0.0, "4829", 0.75),
        (0.0, "4821", 1.0),
        (1.0, "1234", 1.0),  # format only
        (1.0, "abcd", 0.0),
        (1.0, "48ab", 0.5),
        (0.25, "4829", 0.25 * 1 + 0.75 * 0.75),
        (0.25, "48ab", 0.25 * 0.5 + 0.75 * 0.5),
    ],
)
def test_format_weight(weight, completion, reward):
    assert Echo(format_weight=weight).score(completion, ROW).reward == pytest.approx(reward, abs=1e-12)


def test_gold_as_int_and_reward_fn():
    task = Echo()
    assert task.score("7", {"digits": 7}).reward == 1.0
    assert task.reward_fn(["4821", "1234", ""], digits=["4821", "4821", "4821"]) == [1.0, 0.5, 0.0]


@pytest.mark.parametrize("weight", [-0.1, 1.5])
def test_format_weight_out_of_range(weight):
    with pytest.raises(ValueError, match=rf"echo: format_weight must be in \[0, 1\], got {weight}"):
        Echo(format_weight=weight)


@pytest.mark.parametrize(
    ("kwargs", "got"),
    [({"length": 0}, "got 0, 256, 64"), ({"n_train": 0}, "got 4, 0, 64"), ({"n_test": -1}, "got 4, 256, -1")],
)
def test_sizes_must_be_positive(kwargs, got):
    with pytest.raises(ValueError, match="echo: length, n_train and n_test must be >= 1") as err:
        Echo(**kwargs)
    assert got in str(err.value)
