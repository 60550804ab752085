import json

import pytest

from es_lightning.tasks import GSM8K, DataSource


@pytest.fixture
def jsonl(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(json.dumps({"q": f"question {i}", "a": f"#### {i}"}) for i in range(20)) + "\n")
    return path


def test_local_jsonl_load(jsonl):
    rows = DataSource(path=str(jsonl)).load()
    assert len(rows) == 20 and rows[3] == {"q": "question 3", "a": "#### 3"}


def test_column_map_renames(jsonl):
    rows = DataSource(path=str(jsonl), column_map={"q": "question", "a": "answer"}).load()
    assert rows[0] == {"question": "question 0", "answer": "#### 0"}
    task = GSM8K(test=DataSource(path=str(jsonl), column_map={"q": "question", "a": "answer"}))
    assert task.score("#### 7", task.load("test")[7]).reward == 1.0


def test_limit_and_shuffle_seed(jsonl):
    assert [r["q"] for r in DataSource(path=str(jsonl), limit=3).load()] == [
        f"question {i}" for i in range(3)
    ]
    assert len(DataSource(path=str(jsonl), limit=100).load()) == 20
    shuffled = DataSource(path=str(jsonl), shuffle_seed=1).load()
    assert shuffled == DataSource(path=str(jsonl), shuffle_seed=1).load()
    assert shuffled != DataSource(path=str(jsonl)).load()
    assert sorted(r["q"] for r in shuffled) == sorted(f"question {i}" for i in range(20))
    first = DataSource(path=str(jsonl), shuffle_seed=1, limit=5).load()
    assert first == shuffled[:5]


def test_missing_file_is_named(tmp_path):
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(FileNotFoundError, match="nope.jsonl"):
        DataSource(path=str(missing)).load()


def test_bad_column_map_and_limit_are_named(jsonl):
    with pytest.raises(ValueError, match="'question'.*not in the dataset's columns"):
        DataSource(path=str(jsonl), column_map={"question": "q2"}).load()
    with pytest.raises(ValueError, match="limit"):
        DataSource(path=str(jsonl), limit=0)


def test_task_load_names_missing_columns(jsonl):
    task = GSM8K(test=DataSource(path=str(jsonl)))
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['question', 'answer'\].*column_map"):
        task.load("test")
    with pytest.raises(ValueError, match="unknown split"):
        task.load("validation")
