"""examples/trl_rewards: reward functions in TRL's signature (completion_ids, log_metric,
log_extra) train from a datasets.Dataset by ES (the script, as a user runs it) and by GRPO (in
process); what they log is in metrics.jsonl."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from es_lightning.training.loggers import read_metrics
from tests.helpers import REPO, subprocess_env

EXAMPLE = REPO / "examples" / "trl_rewards"
SHORT = ["--max_steps", "2", "--eval_limit", "2"]


def _check_logs(run: Path) -> None:
    train = [r for r in read_metrics(run / "metrics.jsonl") if "train/reward_mean" in r]
    assert [r["step"] for r in train] == [1, 2]
    for r in train:
        assert 1 <= r["train/completion_tokens"] <= 12  # log_metric, from completion_ids
        assert {"train/rewards/correct/mean", "train/rewards/digits/mean", "train/rewards/digits/std"} <= set(
            r
        )
    assert any("eval/repeat/pass@1" in r for r in read_metrics(run / "metrics.jsonl"))
    config = (run / "config.yaml").read_text()
    assert "a Dataset in memory (64 rows" in config and "rewards.digits" in config


@pytest.mark.integration
def test_the_script_runs_with_es(tmp_path):
    run = tmp_path / "es"
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE / "train.py"), "--strategy", "es", *SHORT, "--output_dir", str(run)],
        cwd=tmp_path,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    _check_logs(run)
    assert "repeat           pass@1" in proc.stdout  # the before/after table, on stdout


@pytest.mark.usefixtures("fresh_process_group")
def test_it_trains_with_grpo(tmp_path, monkeypatch):
    import runpy

    monkeypatch.syspath_prepend(str(EXAMPLE))  # as `python examples/trl_rewards/train.py` finds rewards.py
    main = runpy.run_path(str(EXAMPLE / "train.py"))["main"]
    run = tmp_path / "grpo"
    results = main(["--strategy", "grpo", *SHORT, "--output_dir", str(run)])
    assert set(results) == {"before", "after"}
    _check_logs(run)
