"""Loggers of the user's choice next to the run's own, and per-sample rewards in saved completions."""

from __future__ import annotations

import csv
import json

import pytest
import yaml

from es_lightning.evaluation.offline import score_completions_file
from es_lightning.tasks import Echo
from tests.helpers import TINY_ES_RECIPE, fit

pytestmark = pytest.mark.integration

RECIPE = TINY_ES_RECIPE.replace(
    "evaluation: null",
    """evaluation: {num_samples: 3, ks: [1, 3], max_tokens: 6}
loggers:
  - class_path: lightning.pytorch.loggers.CSVLogger
    init_args: {save_dir: SAVE_DIR, name: csv, version: ""}""",
)


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


SAMPLES_RECIPE = (
    TINY_ES_RECIPE
    + """loggers:
  - class_path: lightning.fabric.loggers.CSVLogger
    init_args: {root_dir: SAVE_DIR, name: fabric_csv, version: ""}
  - class_path: lightning.pytorch.loggers.CSVLogger
    init_args: {save_dir: SAVE_DIR, name: lightning_csv, version: ""}
"""
)


def _tensorboard(folder):
    """A TensorBoard run as the server reads it (scalars and text as tensors, a resume's purge done)."""
    from tensorboard.backend.event_processing import plugin_event_accumulator as tb

    acc = tb.EventAccumulator(str(folder), size_guidance={tb.TENSORS: 0})
    acc.Reload()
    return acc


def test_text_samples_every_update_reach_every_logger_once_across_a_resume(tmp_path):
    recipe = SAMPLES_RECIPE.replace("SAVE_DIR", str(tmp_path))
    every = ("--trainer.log_samples_every", "1", "--trainer.log_samples", "2", "--trainer.max_steps", "3")
    out = fit(tmp_path, "run", *every, "--trainer.checkpoint_every", "2", recipe=recipe)
    # again from the step-2 checkpoint, as after a kill before update 3 was saved: update 3 again
    fit(tmp_path, "run", *every, "--trainer.resume", str(out / "checkpoints" / "step-000002"), recipe=recipe)

    records = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [1, 1, 2, 2, 3, 3]  # trainer.log_samples per update, none twice
    assert all(
        isinstance(r["prompt"], str) and r["prompt"] and isinstance(r["reward"], float) for r in records
    )
    assert {r["member"] for r in records} <= {None, 0, 1, 2, 3}
    for name in ("fabric_csv", "lightning_csv"):
        hparams = yaml.safe_load((tmp_path / name / "hparams.yaml").read_text())
        assert hparams["strategy"]["init_args"]["population_size"] == 4  # the resolved config
        with (tmp_path / name / "samples.csv").open(newline="") as f:
            rows = list(csv.DictReader(f))
        assert [int(r["step"]) for r in rows] == [1, 1, 2, 2, 3, 3]
        assert [r["completion"] for r in rows] == [r["completion"] for r in records]
    acc = _tensorboard(out / "tensorboard")  # the text plugin's tensors; the resume purged step 3
    texts = acc.Tensors("samples/text_summary")
    assert [e.step for e in texts] == [1, 2, 3]
    first = texts[0].tensor_proto.string_val[0].decode()
    assert (
        first.startswith("| step | member | reward | advantage | rewards | logged | prompt | completion |")
        and first.count("\n") == 3
    )
    assert [e.step for e in acc.Tensors("train/reward_mean")] == [1, 2, 3]
