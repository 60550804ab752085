"""es-lightning compare on run folders as fit writes them (single runs and a pipeline)."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from es_lightning.errors import ConfigError
from es_lightning.report.compare import START, run_compare
from tests.helpers import CLI, subprocess_env
from tests.report.synthetic import TASK, summary, write_pipeline, write_single


@pytest.fixture()
def runs(tmp_path):
    rng = np.random.default_rng(0)
    base, es, grpo, seq = (summary(p, rng) for p in (0.3, 0.35, 0.45, 0.4))
    write_single(tmp_path / "es", base, es, [])  # the writers put each summary under TASK
    write_single(tmp_path / "grpo", base, grpo, [])
    write_pipeline(tmp_path / "es_then_grpo", ["es", "grpo"], [5, 5], base, seq, [[], []])
    return tmp_path, {"base": base, "es": es, "grpo": grpo, "seq": seq}


def test_columns_are_the_start_then_each_run_final_evaluation(runs, tmp_path, capsys):
    root, s = runs
    out = tmp_path / "cmp"
    columns = run_compare([root / "es", root / "grpo", root / "es_then_grpo"], output=out)
    assert list(columns) == [START, "es", "grpo", "es_then_grpo"]
    assert columns == {
        START: {TASK: s["base"]},
        "es": {TASK: s["es"]},
        "grpo": {TASK: s["grpo"]},
        "es_then_grpo": {TASK: s["seq"]},
    }
    printed = capsys.readouterr().out
    line = next(row for row in printed.splitlines() if row.split()[:2] == [TASK, "pass@1"])
    assert line.split()[2:] == ["30.0%", "35.0%", "45.0%", "40.0%"]
    assert json.loads((out / "compare.json").read_text()) == columns
    assert (out / "compare.txt").read_text().strip() == printed.strip()
    assert (out / f"pass_at_k_{TASK}.png").stat().st_size > 0


def test_task_filter_and_bad_input(runs):
    root, _ = runs
    assert list(run_compare([root / "es"], task=TASK, start=False)) == ["es"]
    with pytest.raises(ConfigError, match="no run evaluated task 'gsm8k'"):
        run_compare([root / "es"], task="gsm8k")
    with pytest.raises(ConfigError, match="does not exist"):
        run_compare([root / "missing"])
    (root / "unfinished").mkdir()
    with pytest.raises(ConfigError, match="no final evaluation"):
        run_compare([root / "unfinished"])


def test_cli_takes_run_folders_as_positional_arguments(runs):
    root, _ = runs
    proc = subprocess.run(
        [*CLI, "compare", str(root / "es"), str(root / "grpo"), "--task", TASK],
        env=subprocess_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "start" in proc.stdout and "grpo" in proc.stdout
