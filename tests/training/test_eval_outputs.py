"""The run's printed evaluation tables: before/after with a change column, one column per stage."""

from __future__ import annotations

from es_lightning.evaluation.columns import format_table, print_table

BEFORE = {"arithmetic": {"pass@1": 0.477, "pass@16": 1.0, "greedy": 0.795, "mean_reward": 0.477}}
AFTER = {"arithmetic": {"pass@1": 0.7271, "pass@16": 1.0, "greedy": 0.97, "mean_reward": 0.7271}}


def test_before_after_table(capsys):
    print_table({"before": BEFORE, "after": AFTER}, difference="change")
    out = capsys.readouterr().out
    assert out == format_table({"before": BEFORE, "after": AFTER}, difference="change") + "\n"
    lines = out.splitlines()
    assert lines[0].split() == ["task", "metric", "before", "after", "change"]
    assert lines[1].split() == ["arithmetic", "pass@1", "47.7%", "72.7%", "+25.0"]
    assert lines[3].split() == ["arithmetic", "greedy", "79.5%", "97.0%", "+17.5"]
    assert len(lines) == 4  # mean_reward is not a table metric


def test_before_after_marks_a_metric_missing_before(capsys):
    print_table({"before": {"arithmetic": {"pass@1": 0.5}}, "after": AFTER}, difference="change")
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].split() == ["arithmetic", "pass@16", "-", "100.0%", "-"]


def test_columns_table_marks_missing_values(capsys):
    stage = {"arithmetic": {"pass@1": 0.6, "greedy": 0.9}}
    print_table({"before": BEFORE, "after es": stage, "after grpo": AFTER})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["task", "metric", "before", "after", "es", "after", "grpo"]
    assert lines[1].split() == ["arithmetic", "pass@1", "47.7%", "60.0%", "72.7%"]
    assert lines[2].split() == ["arithmetic", "pass@16", "100.0%", "-", "100.0%"]
    assert lines[3].split() == ["arithmetic", "greedy", "79.5%", "90.0%", "97.0%"]
    assert "change" not in lines[0]
    print_table({})
    assert capsys.readouterr().out == ""
