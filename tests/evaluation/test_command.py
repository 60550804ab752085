"""The evaluate command's output: write_summary's JSON file plus the results table as one column."""

import json

from es_lightning.evaluation.columns import format_table
from es_lightning.evaluation.command import write_summary

SUMMARIES = {
    "echo": {"n_prompts": 2.0, "pass@1": 0.25, "pass@2": 0.5, "greedy": 1.0},
    "countdown": {"n_prompts": 2.0, "pass@1": 0.0, "pass@2": 0.0},
    "average": {"pass@1": 0.125, "pass@2": 0.25},
}


def test_writes_json_and_prints_one_column(tmp_path, capsys):
    path = tmp_path / "sub" / "suite.json"
    write_summary(path, SUMMARIES, label="tiny-model")
    assert json.loads(path.read_text()) == SUMMARIES
    out = capsys.readouterr().out
    assert out == format_table({"tiny-model": SUMMARIES}) + f"\nwritten: {path}\n"
    lines = out.splitlines()
    assert lines[0].split() == ["task", "metric", "tiny-model"]
    assert lines[1].split() == ["echo", "pass@1", "25.0%"]
    assert lines[3].split() == ["echo", "greedy", "100.0%"]
    assert lines[7].split() == ["average", "pass@2", "25.0%"]
    assert len(lines) == 9  # the header, 3 + 2 + 2 rows and the file line


def test_label_defaults_to_the_file_stem(tmp_path, capsys):
    write_summary(tmp_path / "eval.json", {"echo": SUMMARIES["echo"]})
    assert capsys.readouterr().out.splitlines()[0].split() == ["task", "metric", "eval"]
