"""The one results table: rows per task and accuracy, columns per evaluation, an optional change."""

import pytest

from es_lightning.evaluation.columns import format_table, print_table

BEFORE = {"arithmetic": {"pass@1": 0.477, "pass@16": 1.0, "greedy": 0.795, "mean_reward": 0.477}}
AFTER = {"arithmetic": {"pass@1": 0.7271, "pass@16": 1.0, "greedy": 0.97, "mean_reward": 0.7271}}


def test_two_columns_with_change_hand_laid_out():
    assert format_table({"before": BEFORE, "after": AFTER}, difference="change").splitlines() == [
        "task             metric       before    after   change",
        "arithmetic       pass@1        47.7%    72.7%    +25.0",
        "arithmetic       pass@16      100.0%   100.0%     +0.0",
        "arithmetic       greedy        79.5%    97.0%    +17.5",
    ]


def test_rows_are_sorted_by_kind_then_k_and_union_over_columns():
    first = {"gsm8k": {"greedy": 0.5, "maj@2": 0.25, "pass@16": 1.0, "pass@2": 0.5, "n_prompts": 3.0}}
    second = {"gsm8k": {"pass@1": 0.125, "f1": 0.9}, "math": {"pass@1": 0.75}}
    lines = format_table({"a": first, "b": second}, difference="change").splitlines()
    assert [line.split()[:2] for line in lines[1:]] == [
        ["gsm8k", "pass@1"],
        ["gsm8k", "pass@2"],
        ["gsm8k", "pass@16"],
        ["gsm8k", "maj@2"],
        ["gsm8k", "greedy"],
        ["math", "pass@1"],
    ]
    assert lines[1].split()[2:] == ["-", "12.5%", "-"]  # a column lacking a row shows "-"
    assert lines[6].split()[2:] == ["-", "75.0%", "-"]


def test_cells_line_up_under_their_labels():
    columns = {"before": BEFORE, "after es": {"arithmetic": {"pass@1": 0.6}}, "after grpo": AFTER}
    lines = format_table(columns).splitlines()
    assert lines[0].split() == ["task", "metric", "before", "after", "es", "after", "grpo"]
    assert lines[1].split() == ["arithmetic", "pass@1", "47.7%", "60.0%", "72.7%"]
    assert lines[2].split() == ["arithmetic", "pass@16", "100.0%", "-", "100.0%"]
    for label in columns:  # every cell ends where its label ends
        end = lines[0].index(label) + len(label)
        assert all(line[end - 1] != " " and line[end : end + 1] in ("", " ") for line in lines[1:])
    assert len({len(line) for line in lines}) == 1


def test_long_task_and_model_names_widen_their_columns():
    lines = format_table({"Qwen2.5-1.5B-Instruct": {"commonsense_qa_long": {"pass@1": 1.0}}}).splitlines()
    assert lines[0].split() == ["task", "metric", "Qwen2.5-1.5B-Instruct"]
    assert lines[1].split() == ["commonsense_qa_long", "pass@1", "100.0%"]
    assert lines[1].index("pass@1") == lines[0].index("metric")


def test_empty_and_errors(capsys):
    assert format_table({}) == ""
    print_table({})
    assert capsys.readouterr().out == ""
    with pytest.raises(ValueError, match="exactly two columns, got 3"):
        format_table({"a": BEFORE, "b": BEFORE, "c": AFTER}, difference="change")
    print_table({"before": BEFORE, "after": AFTER}, difference="change")
    out = capsys.readouterr().out
    assert out == format_table({"before": BEFORE, "after": AFTER}, difference="change") + "\n"
