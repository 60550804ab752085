"""A callback ends a real run early with ``trainer.should_stop``: after the current update, with
its checkpoint, final evaluation and closing hooks, exit 0 (on one rank and on two, where only
rank 0 asks)."""

from __future__ import annotations

import json

import pytest

from es_lightning.checkpoint import latest_checkpoint
from es_lightning.training.loggers import read_metrics
from tests.helpers import TINY_ES_RECIPE, fit

pytestmark = pytest.mark.integration

STOP = "callbacks: [{class_path: tests.training.early_stop.StopAfter, init_args: {updates: 2%s}}]\n"
RECIPE = TINY_ES_RECIPE.replace(
    "evaluation: null\n", "evaluation: {num_samples: 1, ks: [1], greedy: false, max_tokens: 6}\n"
)


def _check_stopped_after_two(out):
    updates = [m["step"] for m in read_metrics(out / "metrics.jsonl") if "train/reward_mean" in m]
    assert updates == [1, 2]  # of max_steps 6
    assert latest_checkpoint(out).name == "step-000002"
    record = json.loads((out / "stop_record.json").read_text())
    assert record == {"checkpoints": [2], "fit_end": [2]}
    assert (out / "eval" / "after.json").is_file()  # the final evaluation ran


def test_a_callback_stops_the_run_after_the_current_update(tmp_path):
    out = fit(tmp_path, "run", "--trainer.max_steps", "6", recipe=RECIPE + STOP % "")
    _check_stopped_after_two(out)


def test_rank_zero_alone_asking_stops_both_ranks(tmp_path):
    recipe = RECIPE + STOP % ", rank_zero_only: true"
    out = fit(tmp_path, "two", "--trainer.max_steps", "6", "--trainer.devices", "2", recipe=recipe)
    _check_stopped_after_two(out)
