"""Loggers of the user's choice next to the run's own, and per-sample rewards in saved completions."""

from __future__ import annotations

import csv
import json

import pytest
import yaml

from es_lightning.evaluation.offline import score_completions_file
from es_lightning.tasks import Echo
from tests.helpers import TINY_ES_RECIPE, fit

RECIPE = TINY_ES_RECIPE.replace(
    "evaluation: null",
    """evaluation: {num_samples: 3, ks: [1, 3], max_tokens: 6}
loggers:
  - class_path: lightning.pytorch.loggers.CSVLogger
    init_args: {save_dir: SAVE_DIR, name: csv, version: ""}""",
)


@pytest.mark.slow
def test_a_csv_logger_gets_the_metrics_and_the_config_and_completions_carry_rewards(tmp_path):
    out = fit(tmp_path, "run", "--trainer.max_steps", "2", recipe=RECIPE.replace("SAVE_DIR", str(tmp_path)))
    csv_dir = tmp_path / "csv"
    with (csv_dir / "metrics.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [int(r["step"]) for r in rows if r.get("train/reward_mean")] == [1, 2]
    hparams = yaml.safe_load((csv_dir / "hparams.yaml").read_text())
    assert hparams["strategy"]["init_args"]["population_size"] == 4  # the resolved config, once
    assert hparams["trainer"]["max_steps"] == 2

    task = Echo(length=4, n_train=12, n_test=4)
    saved = [
        json.loads(line) for line in (out / "eval" / "after_echo_completions.jsonl").read_text().splitlines()
    ]
    for record in saved:
        row = {"digits": record["digits"]}
        assert record["rewards"] == [task.score(c, row).reward for c in record["completions"]]
        assert record["greedy_reward"] == task.score(record["greedy"], row).reward
    rescored = score_completions_file(task, out / "eval" / "after_echo_completions.jsonl", ks=[1, 3])
    assert rescored["n_prompts"] == 4
