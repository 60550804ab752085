"""A run evaluated on the validation split never reads the test split, and says which it read."""

from __future__ import annotations

import json

import pytest

from es_lightning.callbacks import HeldOutPassAtK
from es_lightning.errors import ConfigError
from es_lightning.tasks import Echo
from tests.helpers import TINY_ES_RECIPE, fit, run_main

TRIPWIRE = "{class_path: tests.tune.tripwire.EchoWithoutTest, init_args: {length: 4, n_train: 12, n_validation: 3, n_test: 4}}"
VALIDATION_RUN = (
    TINY_ES_RECIPE.replace(
        "task: {class_path: es_lightning.tasks.Echo, init_args: {length: 4, n_train: 12, n_test: 4}}",
        f"task: {TRIPWIRE}",
    ).replace(
        "evaluation: null",
        "evaluation: {num_samples: 2, max_tokens: 6, ks: [1, 2], greedy: false, split: validation}",
    )
    + f"""
callbacks:
  - class_path: es_lightning.callbacks.HeldOutPassAtK
    init_args:
      tasks: {{held: {TRIPWIRE}}}
      every_n_updates: 1
      evaluation: {{num_samples: 2, max_tokens: 6, ks: [1], greedy: false}}
      split: validation
"""
)


@pytest.mark.integration
def test_a_run_on_the_validation_split_never_reads_test_and_records_the_split(tmp_path):
    out = fit(tmp_path, "run", "--trainer.max_steps", "1", recipe=VALIDATION_RUN)
    validation = Echo(length=4, n_train=12, n_validation=3, n_test=4).load("validation")
    for tag in ("before", "after"):
        summary = json.loads((out / "eval" / f"{tag}.json").read_text())["echo"]
        assert summary["split"] == "validation" and summary["n_prompts"] == len(validation) == 3
    rows = [
        json.loads(line) for line in (out / "eval" / "after_echo_completions.jsonl").read_text().splitlines()
    ]
    assert [row["digits"] for row in rows] == [row["digits"] for row in validation]
    held = json.loads((out / "heldout" / "step-000001.json").read_text())["held"]
    assert held["split"] == "validation" and held["n_prompts"] == 3


def test_the_tripwire_trips_on_the_default_test_split(tmp_path, monkeypatch, capsys):
    """The check above can fail: the same run evaluating the test split stops at its first read
    (the evaluation before the first update: in this process, nothing is trained)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run.yaml").write_text(VALIDATION_RUN)
    argv = ["fit", "--config", "run.yaml", "--trainer.output_dir", str(tmp_path / "run")]
    with pytest.raises(RuntimeError, match="^echo: the test split was read$"):
        run_main(capsys, *argv, "--trainer.max_steps", "1", "--evaluation.split", "test")
    assert not (tmp_path / "run" / "checkpoints").exists()


def test_held_out_pass_at_k_takes_a_split():
    tasks = {"echo": Echo()}
    assert HeldOutPassAtK(tasks).evaluation.split == "test"
    chosen = HeldOutPassAtK(tasks, split="validation")
    assert chosen.evaluation.split == "validation" and chosen.evaluation.limit == 100
    with pytest.raises(ConfigError, match="evaluation.split must be one of test, validation, got 'train'"):
        HeldOutPassAtK(tasks, split="train")
