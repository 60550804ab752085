import json
import re

import pytest

from es_lightning.errors import ConfigError, MissingPathError
from es_lightning.tasks import GSM8K, DataSource, FunctionTask
from tests.helpers import ASSETS


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
    with pytest.raises(ValueError, match="unknown split 'dev'; use 'train', 'validation' or 'test'"):
        task.load("dev")
    with pytest.raises(ValueError, match="no 'validation' data source configured.*validation_size"):
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


# -- several files: globs, lists, local dataset folders -------------------------------------------
def _shards(folder, rows, names):
    """``rows`` split over files ``names`` (in that order), as JSON lines."""
    folder.mkdir(parents=True, exist_ok=True)
    per = -(-len(rows) // len(names))
    for i, name in enumerate(names):
        _write(folder / name, rows[i * per : (i + 1) * per])
    return folder


def test_a_glob_reads_every_matching_file_in_sorted_order_as_one_split(tmp_path):
    rows = [{"q": f"question {i}", "a": f"#### {i}"} for i in range(7)]
    # written out of order: the glob's sorted order, not the files' age, decides
    shards = _shards(tmp_path / "shards", rows, ["train-00.jsonl", "train-01.jsonl", "train-02.jsonl"])
    (shards / "train-01.jsonl").touch()
    (shards / "notes.txt").write_text("not matched")
    assert DataSource(path=str(shards / "train-*.jsonl")).load() == rows
    assert DataSource(path=str(shards / "train-0[12].jsonl")).load() == rows[3:]
    nested = tmp_path / "nested"
    for i, name in enumerate(["a/x.jsonl", "b/c/y.jsonl"]):
        (nested / name).parent.mkdir(parents=True)
        _write(nested / name, rows[i * 4 : (i + 1) * 4])
    assert DataSource(path=str(nested / "**" / "*.jsonl")).load() == rows
    # shuffle and limit apply to the rows of all files together
    assert DataSource(path=str(shards / "*.jsonl"), shuffle_seed=2).load() == (
        DataSource(path=str(_write(tmp_path / "all.jsonl", rows)), shuffle_seed=2).load()
    )


def test_a_list_of_files_and_globs_is_read_in_the_given_order(tmp_path, monkeypatch):
    rows = [{"q": f"question {i}", "a": f"#### {i}"} for i in range(6)]
    shards = _shards(tmp_path / "d", rows, ["0.jsonl", "1.jsonl", "2.jsonl"])
    monkeypatch.chdir(tmp_path)
    assert DataSource(path=["d/2.jsonl", "d/[01].jsonl"]).load() == rows[4:] + rows[:4]
    (tmp_path / "more.json").write_text(json.dumps(rows[:1]))  # a JSON array beside JSON lines: one format
    assert DataSource(path=["d/0.jsonl", "more.json"]).load() == rows[:2] + rows[:1]
    with pytest.raises(ConfigError, match="'d/1.jsonl' is named twice"):
        DataSource(path=["d/*.jsonl", "d/1.jsonl"]).load()
    with pytest.raises(ConfigError, match="is a folder; list files or globs"):
        DataSource(path=["d/0.jsonl", str(shards)]).load()
    with pytest.raises(FileNotFoundError, match="d/9.jsonl' does not exist"):
        DataSource(path=["d/0.jsonl", "d/9.jsonl"]).load()
    with pytest.raises(ConfigError, match="empty list"):
        DataSource(path=[])


def test_csv_and_parquet_globs(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"question": f"q{i}", "answer": f"#### {i}"} for i in range(5)]
    (tmp_path / "csv").mkdir()
    (tmp_path / "csv" / "a.csv").write_text(
        "question,answer\n" + "".join(f"q{i},#### {i}\n" for i in range(3))
    )
    (tmp_path / "csv" / "b.csv").write_text("question,answer\nq3,#### 3\n\nq4,#### 4\n")
    assert DataSource(path=str(tmp_path / "csv" / "*.csv")).load() == rows
    (tmp_path / "pq").mkdir()
    pq.write_table(pa.Table.from_pylist(rows[:2]), tmp_path / "pq" / "part-0.parquet")
    pq.write_table(pa.Table.from_pylist(rows[2:]), tmp_path / "pq" / "part-1.parquet")
    assert GSM8K(train=DataSource(path=str(tmp_path / "pq" / "part-*.parquet"))).load("train") == rows


def test_a_glob_that_matches_no_file_or_mixes_formats_is_refused(tmp_path):
    pattern = str(tmp_path / "data" / "*.jsonl")
    with pytest.raises(MissingPathError, match=rf"no file matches the glob '{re.escape(pattern)}'"):
        DataSource(path=pattern).load()
    (tmp_path / "data").mkdir()
    _write(tmp_path / "data" / "a.jsonl", _gsm8k_rows(2))
    (tmp_path / "data" / "b.csv").write_text("question,answer\nq,#### 1\n")
    with pytest.raises(ConfigError, match=r"mix formats \(json \('.*a.jsonl'\), csv \('.*b.csv'\)\)"):
        DataSource(path=str(tmp_path / "data" / "*")).load()
    (tmp_path / "data" / "b.csv").unlink()
    (tmp_path / "data" / "README.md").write_text("# notes")
    with pytest.raises(ConfigError, match=r"README.md' \(matched by '.*data/\*'\) is a .md file"):
        DataSource(path=str(tmp_path / "data" / "*")).load()
    _write(tmp_path / "data" / "c.jsonl", [{"other": 1}])  # different columns: named, with a hint
    with pytest.raises(ConfigError, match=r"(?s)cannot read .*do all 2 files have the same columns"):
        DataSource(path=str(tmp_path / "data" / "*.jsonl")).load()


def test_a_bad_row_in_a_later_file_is_named_by_that_file_and_line(tmp_path):
    rows = _gsm8k_rows(9)
    shards = _shards(tmp_path / "shards", rows, ["s0.jsonl", "s1.jsonl", "s2.jsonl"])
    bad = [{**r} for r in rows[3:6]]
    del bad[1]["answer"]  # the second shard's 2nd row, written after a blank line
    _write(shards / "s1.jsonl", bad, blank_after=1)
    second = shards / "s1.jsonl"
    for source in (
        DataSource(path=str(shards / "s*.jsonl")),
        DataSource(path=str(shards / "s*.jsonl"), shuffle_seed=5),  # named by file, not shuffled order
        DataSource(path=[str(shards / "s2.jsonl"), str(second)]),
    ):
        with pytest.raises(ConfigError, match=rf"gsm8k: '{second}' line 3 lacks a value for column"):
            GSM8K(train=source).load("train")
    _write(second, rows[3:5] + [{"question": "q", "answer": "no number"}])
    with pytest.raises(ConfigError, match=rf"'{second}' line 3: the gold answer"):
        GSM8K(train=DataSource(path=str(shards / "*.jsonl"))).load("train")
    # a malformed line is named before datasets reads anything
    second.write_text('{"question": "q", "answer": "#### 1"}\n{"question": \n')
    with pytest.raises(ConfigError, match=rf"'{second}' line 2: invalid JSON"):
        DataSource(path=str(shards / "*.jsonl")).load()
    # CSV shards: the row within its file (1-based, header not counted)
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "a.csv").write_text("question,answer\nq0,#### 0\nq1,#### 1\n")
    (tmp_path / "c" / "b.csv").write_text('question,answer\nq2,"two\nlines #### 2"\nq3,none\n')
    with pytest.raises(ConfigError, match=rf"'{tmp_path / 'c' / 'b.csv'}' row 2: the gold answer 'none'"):
        GSM8K(train=DataSource(path=str(tmp_path / "c" / "*.csv"))).load("train")


def test_gsm8k_and_a_function_task_train_on_real_rows_from_shards(tmp_path):
    whole = ASSETS / "gsm8k" / "train.jsonl"
    lines = whole.read_text().splitlines()
    shards = tmp_path / "gsm8k"
    shards.mkdir()
    for i in range(3):  # train-00000-of-00003.jsonl, ... as hub exports name them
        (shards / f"train-{i:05d}-of-00003.jsonl").write_text("\n".join(lines[i::3]) + "\n")
    expected = [json.loads(line) for i in range(3) for line in lines[i::3]]
    task = GSM8K(train=DataSource(path=str(shards / "train-*.jsonl")))
    rows = task.load("train")
    assert rows == expected and len(rows) == len(lines)
    assert sorted(r["question"] for r in rows) == sorted(
        r["question"] for r in GSM8K(train=DataSource(path=str(whole))).load("train")
    )
    assert task.score(rows[0]["answer"], rows[0]).reward == 1.0

    def final_answer(completions, answer, **kwargs):
        return [
            float(c.split("####")[-1].strip() == a.split("####")[-1].strip())
            for c, a in zip(completions, answer)
        ]

    function = FunctionTask(
        train=DataSource(path=str(shards / "*.jsonl"), column_map={"question": "prompt"}),
        reward_funcs=[final_answer],
    )
    rows = function.load("train")
    assert [r["prompt"] for r in rows] == [r["question"] for r in expected]
    assert function.score("#### " + rows[1]["answer"].split("####")[-1], rows[1]).reward == 1.0


def test_a_local_dataset_folder_is_read_with_datasets_semantics(tmp_path, monkeypatch):
    folder = tmp_path / "my_data"
    folder.mkdir()
    _write(folder / "train.jsonl", _gsm8k_rows(4))
    _write(folder / "test.jsonl", _gsm8k_rows(2))
    source = DataSource(path=str(folder), split="test")
    assert source.local_files() is None and source.local_folder() == folder
    assert source.load() == _gsm8k_rows(2)
    task = GSM8K(train=DataSource(path=str(folder)), test=source)
    assert len(task.load("train")) == 4 and len(task.load("test")) == 2
    monkeypatch.chdir(tmp_path)
    assert DataSource(path="my_data", split="train").load() == _gsm8k_rows(4)  # relative, no ./
    with pytest.raises(
        ConfigError, match=r"local dataset folder '.*my_data' \(split validation\).*Unknown split"
    ):
        DataSource(path=str(folder), split="validation").load()
    (tmp_path / "nothing").mkdir()
    with pytest.raises(ConfigError, match="local dataset folder .*nothing.*doesn't contain any data files"):
        DataSource(path=str(tmp_path / "nothing")).load()
