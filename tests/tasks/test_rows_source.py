"""Data in memory wherever a data source is: a datasets.Dataset or IterableDataset (as TRL takes
them), a list of row dicts or a path; each row checked as a file's are."""

from __future__ import annotations

import json

import pytest
from datasets import Dataset, DatasetDict

from es_lightning.errors import ConfigError
from es_lightning.tasks import GSM8K, DataSource, Echo, FunctionTask
from es_lightning.tasks.rows_source import RowsSource, as_source

ROWS = [{"prompt": f"Say {i}", "answer": str(i)} for i in range(6)]


def exact(prompts, completions, answer, **kwargs):
    return [float(c == a) for c, a in zip(completions, answer)]


@pytest.mark.parametrize(
    "data",
    [Dataset.from_list(ROWS), Dataset.from_list(ROWS).to_iterable_dataset(), ROWS, tuple(ROWS)],
    ids=["Dataset", "IterableDataset", "list", "tuple"],
)
def test_in_memory_rows_load_as_a_files_rows(data):
    task = FunctionTask(train=data, test=data, reward_funcs=[exact])
    assert isinstance(task.train, RowsSource)
    assert task.load("train") == ROWS == task.load("test")
    assert task.load("train") == ROWS  # read again (an IterableDataset too)


def test_a_torch_formatted_dataset_gives_plain_values():
    rows = [{"prompt": "p", "answer": "1", "level": 3}]
    task = FunctionTask(train=Dataset.from_list(rows).with_format("torch"), reward_funcs=[exact])
    assert task.load("train") == rows


def test_a_bad_row_is_named_by_its_position():
    rows = [*ROWS[:2], {"prompt": None, "answer": "9"}]
    task = FunctionTask(train=Dataset.from_list(rows), reward_funcs=[exact], name="say")
    with pytest.raises(ConfigError) as raised:
        task.load("train")
    message = str(raised.value)
    assert message.startswith("say: row 3 of a Dataset in memory (3 rows, columns ['prompt', 'answer'])"), (
        message
    )
    assert "lacks a value for column(s) ['prompt']" in message, message
    with pytest.raises(
        ConfigError, match=r"row 1 of a list in memory \(1 rows\) lacks column\(s\) \['answer'\]"
    ):
        FunctionTask(train=[{"prompt": "Say 1"}], reward_funcs=[exact]).load("train")
    with pytest.raises(ConfigError, match="row 2 of a list in memory .* is a str, not a mapping"):
        FunctionTask(train=[ROWS[0], "oops"], reward_funcs=[exact]).load("train")
    with pytest.raises(ConfigError, match="has no rows"):
        FunctionTask(train=[], reward_funcs=[exact]).load("train")


def test_a_held_out_validation_slice_and_a_path_work_as_for_files(tmp_path):
    task = GSM8K(
        train=Dataset.from_list([{"question": f"q{i}", "answer": f"#### {i}"} for i in range(10)]),
        validation_size=3,
    )
    train, validation = task.load("train"), task.load("validation")
    assert len(train) == 7 and len(validation) == 3
    assert {r["question"] for r in train}.isdisjoint(r["question"] for r in validation)
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    assert isinstance(as_source(data, "x"), DataSource) and isinstance(as_source(str(data), "x"), DataSource)
    assert FunctionTask(train=data, reward_funcs=[exact]).load("train") == ROWS
    assert Echo(test=Dataset.from_list([{"digits": "1234"}]), n_train=2, n_test=1).load("test") == [
        {"digits": "1234"}
    ]


def test_a_dataset_dict_or_another_object_is_refused_in_one_line():
    splits = DatasetDict({"train": Dataset.from_list(ROWS), "test": Dataset.from_list(ROWS)})
    with pytest.raises(ConfigError, match=r"got a DatasetDict of the splits 'train', 'test'; give one split"):
        FunctionTask(train=splits, reward_funcs=[exact])
    with pytest.raises(
        ConfigError, match="function: test: got a int; give a DataSource, a path, a datasets.Dataset"
    ):
        FunctionTask(test=3, reward_funcs=[exact])
