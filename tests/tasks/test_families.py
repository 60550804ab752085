"""The task family bases: split dispatch, default sources, and the constructor schema jsonargparse reads."""

import json
import random

import pytest
from jsonargparse import ArgumentParser

from es_lightning.errors import ConfigError
from es_lightning.tasks import (
    GPQA,
    GSM8K,
    MBPP,
    Arithmetic,
    CommonsenseQA,
    Countdown,
    CountdownTiny,
    DatasetTask,
    DataSource,
    Echo,
    GeneratedTask,
    HotpotQA,
    MathTask,
    MultipleChoice,
    Score,
    get_task,
)
from es_lightning.tasks.families import held_out
from tests.helpers import ASSETS


class Squares(GeneratedTask):
    """A small generated task: square a random number."""

    name = "squares"
    required_columns = ("n",)

    def __init__(self, *, n_train: int = 5, n_test: int = 3, seed: int = 0, n_validation: int = 2, **kwargs):
        super().__init__(n_train=n_train, n_validation=n_validation, n_test=n_test, seed=seed, **kwargs)

    def generate_split(self, split):
        rng = random.Random(f"squares-{self.seed}-{split}")
        return [{"n": rng.randint(0, 10**9)} for _ in range(self.split_size(split))]

    def question(self, row):
        return f"{row['n']}^2 = ?"

    def score(self, completion, row):
        return Score(
            reward=float(completion.strip() == str(row["n"] ** 2)), answer=completion.strip() or None
        )


@pytest.fixture
def rows_file(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(json.dumps({"n": n}) for n in (2, 3)) + "\n")
    return path


# -- GeneratedTask: split dispatch --------------------------------------------------------------
def test_generated_splits_come_from_the_generator_unless_a_source_is_set(rows_file, tmp_path):
    task = Squares(n_train=4, n_test=2, seed=1)
    assert task.load("train") == task.generate_split("train") and len(task.load("train")) == 4
    assert task.load("test") == task.generate_split("test") and len(task.load("test")) == 2
    assert task.load("validation") == task.generate_split("validation") and len(task.load("validation")) == 2
    assert task.load() == task.load("train")

    mixed = Squares(n_train=4, n_test=2, seed=1, test=DataSource(path=str(rows_file)))
    assert mixed.load("test") == [{"n": 2}, {"n": 3}]  # read from the file, not generated
    assert mixed.load("train") == task.load("train")  # the other split is still generated

    held = Squares(n_train=4, n_test=2, seed=1, validation=DataSource(path=str(rows_file)))
    assert held.source("validation") is held.validation and held.load("validation") == [{"n": 2}, {"n": 3}]
    assert held.load("test") == task.load("test")
    assert mixed.score("9", mixed.load("test")[1]).reward == 1.0

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"m": 1}\n')
    with pytest.raises(ValueError, match=r"squares: .*bad.jsonl' line 1 lacks column\(s\) \['n'\]"):
        Squares(train=DataSource(path=str(bad))).load("train")


@pytest.mark.parametrize(
    "task",
    [
        Squares(),
        Squares(test=DataSource(path="unused.jsonl")),
        *(get_task(name) for name in ("arithmetic", "countdown", "echo", "gsm8k", "hotpotqa", "math")),
        *(get_task(name) for name in ("mbpp", "multiple_choice", "commonsense_qa", "gpqa")),
    ],
    ids=lambda task: task.name,
)
@pytest.mark.parametrize("split", ["valid", "val", "Train", "dev", ""])
def test_an_unknown_split_is_an_error_naming_the_task(task, split):
    message = rf"^{task.name}: unknown split {split!r}; use 'train', 'validation' or 'test'$"
    with pytest.raises(ValueError, match=message):
        task.load(split)
    with pytest.raises(ValueError, match=message):
        task.source(split)


def test_a_split_without_a_source_is_named():
    with pytest.raises(
        ValueError, match=r"^gpqa: no 'train' data source configured \(set `train:` in the task\)"
    ):
        GPQA().load("train")
    with pytest.raises(ValueError, match="^multiple_choice: no 'test' data source configured"):
        MultipleChoice().load("test")


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: Squares(n_train=-1), r"^squares: n_train must be at least 0, got -1$"),
        (lambda: Squares(n_test=-3), r"^squares: n_test must be at least 0, got -3$"),
        (lambda: Squares(n_validation=-2), r"^squares: n_validation must be at least 0, got -2$"),
        (lambda: Countdown(n_test=-1), r"^countdown: n_test must be at least 0, got -1$"),
        (lambda: Arithmetic(n_train=-5), r"^arithmetic: n_train must be at least 0, got -5$"),
    ],
)
def test_negative_split_sizes_name_the_task_and_the_argument(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_empty_generated_splits_are_allowed():
    assert Squares(n_train=0, n_test=0).load("train") == []
    assert Countdown(n_train=0, n_test=2).load("train") == []
    assert Arithmetic(n_test=0).load("test") == []


# -- the built-in generated tasks: seeded, and (where promised) disjoint splits -----------------
def _countdown_key(row):
    return tuple(sorted(row["nums"])), row["target"]


GENERATED = [
    (
        Arithmetic,
        {"max_number": 6, "n_train": 130, "n_validation": 30, "n_test": 50},
        lambda r: (r["a"], r["b"], r["c"]),
    ),
    (Countdown, {"n_train": 120, "n_validation": 30, "n_test": 40}, _countdown_key),
    (CountdownTiny, {"n_train": 120, "n_validation": 30, "n_test": 40}, _countdown_key),
    (Echo, {"length": 12, "n_train": 100, "n_validation": 30, "n_test": 30}, lambda r: r["digits"]),
    (Squares, {"n_train": 50, "n_validation": 10, "n_test": 20}, lambda r: r["n"]),
]


@pytest.mark.parametrize(("cls", "settings", "key"), GENERATED, ids=[cls.__name__ for cls, _, _ in GENERATED])
def test_generated_splits_are_seeded_sized_and_disjoint(cls, settings, key):
    task, again, other = cls(seed=7, **settings), cls(seed=7, **settings), cls(seed=8, **settings)
    train, validation, test = (task.load(split) for split in ("train", "validation", "test"))
    sizes = (settings["n_train"], settings["n_validation"], settings["n_test"])
    assert (len(train), len(validation), len(test)) == sizes
    for split, rows in (("train", train), ("validation", validation), ("test", test)):
        assert rows == again.load(split)  # same seed, same rows
        assert rows != other.load(split)  # another seed, other rows
    keys = [{key(r) for r in rows} for rows in (train, validation, test)]
    assert not keys[1] & keys[0] and not keys[1] & keys[2]  # validation apart from train and test
    if cls in (Arithmetic, Countdown, CountdownTiny):  # unique problems, all three splits apart
        assert not keys[0] & keys[2] and len(keys[1]) == len(validation)


PINNED = [
    (Echo(), "train", [{"digits": "3593"}, {"digits": "8442"}, {"digits": "0206"}]),
    (Echo(), "test", [{"digits": "9143"}, {"digits": "5964"}, {"digits": "9971"}]),
    (
        Arithmetic(),
        "train",
        [{"a": 9, "b": 9, "c": 8}, {"a": 20, "b": 25, "c": 23}, {"a": 4, "b": 28, "c": 22}],
    ),
    (
        Arithmetic(),
        "test",
        [{"a": 14, "b": 29, "c": 29}, {"a": 24, "b": 4, "c": 8}, {"a": 16, "b": 18, "c": 16}],
    ),
    (
        Countdown(n_train=5, n_test=3, n_validation=0),  # the train split before validation splits
        "train",
        [
            {"nums": [94, 42, 91, 9], "target": 54, "solution": "(42 + 9) + (94 - 91)"},
            {"nums": [41, 66, 63, 14], "target": 775, "solution": "((63 * 14) - 41) - 66"},
            {"nums": [5, 79, 85, 34], "target": 33, "solution": "(79 + (34 + 5)) - 85"},
        ],
    ),
    (
        Countdown(n_train=5, n_test=3, n_validation=3),  # the validation split takes those places
        "validation",
        [
            {"nums": [94, 42, 91, 9], "target": 54, "solution": "(42 + 9) + (94 - 91)"},
            {"nums": [41, 66, 63, 14], "target": 775, "solution": "((63 * 14) - 41) - 66"},
            {"nums": [5, 79, 85, 34], "target": 33, "solution": "(79 + (34 + 5)) - 85"},
        ],
    ),
    (
        Countdown(n_train=5, n_test=3),
        "test",
        [
            {"nums": [50, 98, 54, 6], "target": 832, "solution": "(98 * (54 / 6)) - 50"},
            {"nums": [61, 72, 13, 46], "target": 22, "solution": "(61 - (72 - 46)) - 13"},
            {"nums": [34, 8, 71, 2], "target": 80, "solution": "71 + ((34 / 2) - 8)"},
        ],
    ),
]


@pytest.mark.parametrize(
    ("task", "split", "first_rows"), PINNED, ids=[f"{task.name}-{split}" for task, split, _ in PINNED]
)
def test_generated_rows_are_pinned(task, split, first_rows):
    """Resumed runs re-generate their data: the default streams must not drift."""
    assert task.load(split)[:3] == first_rows


# -- DatasetTask: default sources -----------------------------------------------------------------
def test_default_sources_are_copies_per_instance():
    first, second = GSM8K(), GSM8K()
    assert first.train == GSM8K.default_train and first.test == GSM8K.default_test
    assert first.train is not GSM8K.default_train and first.train is not second.train
    first.train.limit = 3
    first.test.column_map["q"] = "question"
    assert second.train.limit is None and GSM8K.default_train.limit is None
    assert second.test.column_map == {} and GSM8K.default_test.column_map == {}
    csqa = CommonsenseQA()
    csqa.test.column_map.clear()
    assert CommonsenseQA().test.column_map == {"answerKey": "answer"}


def test_a_given_source_replaces_only_its_default(rows_file):
    mine = DataSource(path=str(rows_file))
    task = MathTask(test=mine)
    assert task.test is mine
    assert task.train == MathTask.default_train
    assert GPQA(train=mine).train is mine and GPQA().train is None  # no default training set


def test_family_bases_are_abstract():
    with pytest.raises(TypeError, match="abstract"):
        DatasetTask()
    with pytest.raises(TypeError, match="abstract"):
        GeneratedTask(n_train=1, n_test=1)


@pytest.mark.parametrize("cls", [Countdown, Echo, MathTask, MBPP, GPQA])
def test_constructors_take_keywords_only(cls):
    with pytest.raises(TypeError, match="positional"):
        cls(DataSource(path="rows.jsonl"))


# -- the schema jsonargparse builds from the constructors ---------------------------------------
SHARED = {"train", "validation", "test", "system_prompt", "prompt_template"}
HELD_OUT = {"validation_size": None, "validation_fraction": None, "validation_seed": 0}
OWN = {
    GSM8K: HELD_OUT,
    HotpotQA: HELD_OUT,
    MathTask: {"timeout_s": 5, **HELD_OUT},
    MBPP: {
        "time_limit_s": 5.0,
        "memory_mb": 1024,
        "max_workers": 4,
        "use_challenge_tests": False,
        "isolation": "bwrap",
        **HELD_OUT,
    },
    MultipleChoice: {"correct_column": None, "incorrect_columns": None, "shuffle_seed": None, **HELD_OUT},
    CommonsenseQA: {"shuffle_seed": None, **HELD_OUT},
    GPQA: {"shuffle_seed": 0, **HELD_OUT},
    Arithmetic: {"max_number": 30, "n_train": 1000, "n_validation": 200, "n_test": 200, "seed": 0},
    Countdown: {
        "num_numbers": 4,
        "max_number": 100,
        "max_target": 1000,
        "n_train": 10000,
        "n_validation": 200,
        "n_test": 500,
        "seed": 0,
    },
    Echo: {"length": 4, "n_train": 256, "n_validation": 64, "n_test": 64, "seed": 0, "format_weight": 0.5},
}


@pytest.mark.parametrize("cls", list(OWN), ids=lambda cls: cls.__name__)
def test_the_config_schema_holds_the_shared_and_the_own_arguments(cls):
    parser = ArgumentParser(exit_on_error=False)
    parser.add_class_arguments(cls, "task")
    defaults = parser.get_defaults().task
    assert set(defaults.keys()) == SHARED | set(OWN[cls])
    assert {k: defaults[k] for k in OWN[cls]} == OWN[cls]
    assert all(defaults[k] is None for k in SHARED)


@pytest.mark.parametrize(
    ("cls", "own"),
    [(Echo, {"length": 3}), (Countdown, {"max_number": 20, "n_train": 4}), (MathTask, {"timeout_s": 2})],
    ids=["echo", "countdown", "math"],
)
def test_a_config_builds_the_task_with_shared_and_own_arguments(cls, own, rows_file):
    parser = ArgumentParser(exit_on_error=False)
    parser.add_class_arguments(cls, "task")
    config = {"task": {**own, "test": {"path": str(rows_file)}, "system_prompt": "Be brief."}}
    task = parser.instantiate(parser.parse_object(config)).task
    assert isinstance(task, cls)
    assert all(getattr(task, k) == v for k, v in own.items())
    assert task.test == DataSource(path=str(rows_file)) and task.system_prompt == "Be brief."


# -- DatasetTask: the validation split ----------------------------------------------------------
GSM8K_TRAIN = DataSource(path=str(ASSETS / "gsm8k" / "train.jsonl"))  # 22 real rows


def test_held_out_positions_are_seeded_nested_and_sized():
    assert len(held_out(22, 5, seed=0)) == 5
    assert held_out(22, 5, seed=0) == held_out(22, 5, seed=0)
    assert held_out(22, 5, seed=0) != held_out(22, 5, seed=1)
    assert held_out(22, 3, seed=0) < held_out(22, 5, seed=0)  # a smaller slice is part of a larger one
    # the reference: the first `size` of range(n) shuffled by the seeded generator, by hand
    order = list(range(22))
    random.Random("validation-0").shuffle(order)
    assert held_out(22, 5, seed=0) == set(order[:5])
    for size in (0, 22, 30):
        with pytest.raises(
            ConfigError, match=f"a validation slice of {size} rows leaves no training rows of 22"
        ):
            held_out(22, size, seed=0)


def test_a_dataset_task_holds_a_seeded_validation_slice_out_of_train():
    rows = GSM8K(train=GSM8K_TRAIN).load("train")
    task = GSM8K(train=GSM8K_TRAIN, validation_size=5, validation_seed=3)
    train, validation = task.load("train"), task.load("validation")
    assert (len(train), len(validation)) == (17, 5)
    assert task.source("validation") is None and task.holds_out_validation()
    questions = [{r["question"] for r in split} for split in (train, validation)]
    assert not questions[0] & questions[1]  # disjoint
    assert questions[0] | questions[1] == {r["question"] for r in rows}  # together: the train source
    assert train == [r for r in rows if r["question"] in questions[0]]  # in the source's order
    assert validation == [rows[i] for i in sorted(held_out(22, 5, seed=3))]
    assert GSM8K(train=GSM8K_TRAIN, validation_size=5, validation_seed=4).load("validation") != validation

    by_fraction = GSM8K(train=GSM8K_TRAIN, validation_fraction=0.25, validation_seed=3)
    assert len(by_fraction.load("validation")) == round(0.25 * 22) == 6  # 5.5 rounds to 6
    assert len(by_fraction.load("train")) == 16
    assert GSM8K(train=GSM8K_TRAIN, validation_fraction=0.01).load("validation") != []  # at least one row


def test_a_named_validation_source_leaves_train_whole():
    test_file = DataSource(path=str(ASSETS / "gsm8k" / "test.jsonl"), limit=4)
    task = GSM8K(train=GSM8K_TRAIN, validation=test_file)
    assert not task.holds_out_validation() and task.source("validation") is test_file
    assert len(task.load("train")) == 22 and len(task.load("validation")) == 4


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (
            {"validation_size": 2, "validation_fraction": 0.1},
            "give one of validation_size and validation_fraction",
        ),
        ({"validation": GSM8K_TRAIN, "validation_size": 2}, "give one of validation and validation_size"),
        ({"validation_size": 0}, "validation_size must be at least 1, got 0"),
        ({"validation_fraction": 1.0}, r"validation_fraction must be in \(0, 1\), got 1.0"),
        ({"validation_fraction": 0.0}, r"validation_fraction must be in \(0, 1\), got 0.0"),
    ],
)
def test_bad_validation_settings_are_named(kwargs, match):
    with pytest.raises(ConfigError, match=f"^gsm8k: {match}"):
        GSM8K(train=GSM8K_TRAIN, **kwargs)


def test_a_missing_validation_split_says_how_to_set_one():
    with pytest.raises(ConfigError, match="^gsm8k: no 'validation' data source configured .*validation_size"):
        GSM8K(train=GSM8K_TRAIN).load("validation")
    with pytest.raises(ConfigError, match="leaves no training rows of 22"):
        GSM8K(train=GSM8K_TRAIN, validation_size=22).load("validation")
