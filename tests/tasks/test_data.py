import json

import pytest

from es_lightning.errors import ConfigError
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


def _gsm8k_rows(n: int = 5) -> list[dict]:
    return [{"question": f"q{i}", "answer": f"{i} + 0 = {i}\n#### {i}"} for i in range(n)]


def _write(path, rows, blank_after: int | None = None):
    lines = [json.dumps(r) for r in rows]
    if blank_after is not None:
        lines.insert(blank_after, "")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_every_row_is_validated_and_a_later_bad_row_names_file_and_line(tmp_path):
    rows = _gsm8k_rows()
    del rows[2]["answer"]  # the 3rd row lacks its answer column
    path = _write(tmp_path / "third.jsonl", rows)
    with pytest.raises(
        ConfigError, match=rf"gsm8k: '{path}' line 3 lacks a value for column\(s\) \['answer'\]"
    ):
        GSM8K(train=DataSource(path=str(path))).load("train")
    # blank lines are skipped by the loader; the message still names the file's line
    path = _write(tmp_path / "blank.jsonl", rows, blank_after=1)
    with pytest.raises(ConfigError, match="line 4 lacks"):
        GSM8K(train=DataSource(path=str(path))).load("train")
    # shuffled rows are named by their place in the file, not in the shuffled order
    with pytest.raises(ConfigError, match="line 4 lacks"):
        GSM8K(train=DataSource(path=str(path), shuffle_seed=3)).load("train")
    # rows a `limit` leaves out are not read by the task
    assert len(GSM8K(train=DataSource(path=str(tmp_path / "third.jsonl"), limit=2)).load("train")) == 2


def test_column_types_and_gold_answers_are_checked_per_row(tmp_path):
    rows = _gsm8k_rows()
    rows[3]["answer"] = 42
    path = _write(tmp_path / "typed.jsonl", [{**r, "answer": str(r["answer"])} for r in rows[:3]] + rows[3:4])
    with pytest.raises(ConfigError, match=r"line 4 column 'answer' must be a str, got int"):
        GSM8K(train=DataSource(path=str(path))).load("train")
    rows = _gsm8k_rows()
    rows[1]["answer"] = "no final answer line"
    path = _write(tmp_path / "gold.jsonl", rows)
    with pytest.raises(ConfigError, match="line 2: the gold answer 'no final answer line' gives no answer"):
        GSM8K(train=DataSource(path=str(path))).load("train")


def test_malformed_json_lines_are_named(tmp_path):
    lines = [json.dumps(r) for r in _gsm8k_rows()]
    lines[3] = lines[3][:-1]
    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=rf"'{path}' line 4: invalid JSON"):
        DataSource(path=str(path)).load()
    path.write_text('{"question": "a"}\n[1, 2]\n')
    with pytest.raises(ConfigError, match="line 2: expected a JSON object, got list"):
        DataSource(path=str(path)).load()


def test_empty_sources_are_refused(tmp_path):
    for name, text in (("empty.jsonl", ""), ("blank.jsonl", "\n\n"), ("empty.json", "[]"), ("empty.csv", "")):
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(ConfigError, match=rf"'{path}'.*(empty|no rows)"):
            DataSource(path=str(path)).load()


def test_json_arrays_and_unreadable_formats(tmp_path):
    path = tmp_path / "rows.json"
    path.write_text(json.dumps(_gsm8k_rows(3)))
    assert len(GSM8K(test=DataSource(path=str(path))).load("test")) == 3
    path.write_text(json.dumps([{"question": "a", "answer": "#### 1"}, "oops"]))
    with pytest.raises(ConfigError, match="row 2: expected a JSON object, got str"):
        DataSource(path=str(path)).load()
    text = tmp_path / "rows.txt"
    text.write_text("hello")
    with pytest.raises(ConfigError, match=r"rows.txt' is a .txt file; local datasets must be .jsonl"):
        DataSource(path=str(text)).load()
    with pytest.raises(FileNotFoundError, match="does not exist"):
        DataSource(path="./data/no_such_folder").load()


def test_a_hub_dataset_that_cannot_be_reached_is_named(monkeypatch):
    import datasets

    def unreachable(*args, **kwargs):
        raise ConnectionError("Couldn't reach 'org/data' on the Hub (LocalEntryNotFoundError)")

    monkeypatch.setattr(datasets, "load_dataset", unreachable)
    with pytest.raises(ConfigError) as err:
        DataSource(path="org/data", name="main", split="test").load()
    message = str(err.value)
    assert "hub dataset 'org/data' (main, split test) cannot be loaded" in message
    assert "local datasets cache" in message and "HF_HUB_OFFLINE=1" in message
