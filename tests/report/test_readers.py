"""Reading single-run and pipeline folders in the formats `es-lightning fit` writes."""

from __future__ import annotations

import json

import numpy as np

from es_lightning.report.readers import (
    final_checkpoint,
    final_eval_file,
    is_finished,
    pass_at_k,
    pick_task,
    read_after,
    read_before,
    read_series,
    run_updates,
    starting_model,
)
from tests.report.synthetic import TASK, summary, training_metrics, write_pipeline, write_single


def test_single_run(tmp_path):
    rng = np.random.default_rng(0)
    before, after = summary(0.4, rng), summary(0.6, rng)
    metrics = training_metrics(rng, 4, -0.1)
    write_single(tmp_path, before, after, metrics, max_steps=4)
    assert is_finished(tmp_path)
    assert read_before(tmp_path)[TASK] == before and read_after(tmp_path)[TASK] == after
    series = read_series(tmp_path)
    assert [s for s, _ in series["train/reward_mean"]] == [1, 2, 3, 4]
    assert series["train/reward_mean"][-1][1] == metrics[-2]["train/reward_mean"]  # the eval line is separate
    assert final_checkpoint(tmp_path).name == "step-000004"
    assert starting_model(tmp_path) == "es-lightning/tiny-arithmetic"
    assert run_updates(tmp_path) == 4


def test_pipeline_joins_stages(tmp_path):
    rng = np.random.default_rng(1)
    before, after = summary(0.4, rng), summary(0.7, rng)
    stage_metrics = [training_metrics(rng, 3, 0.0), training_metrics(rng, 2, 0.0)]
    write_pipeline(tmp_path, ["es", "grpo"], [3, 2], before, after, stage_metrics)
    assert final_eval_file(tmp_path) == tmp_path / "stage2_grpo" / "eval" / "after.json"
    assert read_before(tmp_path)[TASK] == before and read_after(tmp_path)[TASK] == after
    steps = [s for s, _ in read_series(tmp_path)["train/reward_mean"]]
    assert steps == [1, 2, 3, 4, 5]  # stage 2's steps 1, 2 follow stage 1's 3 updates
    assert read_series(tmp_path)["train/reward_mean"][3][1] == stage_metrics[1][0]["train/reward_mean"]
    assert final_checkpoint(tmp_path).parent.parent.name == "stage2_grpo"
    assert run_updates(tmp_path) == 5


def test_unfinished_pipeline_is_not_finished(tmp_path):
    rng = np.random.default_rng(2)
    write_pipeline(tmp_path, ["grpo", "es"], [1, 1], summary(0.4, rng), summary(0.5, rng), [[], []])
    (tmp_path / "stage2_es" / "eval" / "after.json").unlink()
    assert (tmp_path / "stage1_grpo" / "eval" / "after.json").is_file()
    assert not is_finished(tmp_path)


def test_broken_lines_and_nulls_are_skipped(tmp_path):
    (tmp_path / "metrics.jsonl").write_text(
        json.dumps({"step": 1, "es/kappa_pair": None, "x": 1.0}) + "\n" + '{"step": 2, "x": 2.'
    )
    assert read_series(tmp_path) == {"x": [(1, 1.0)]}
    assert not is_finished(tmp_path)
    assert final_checkpoint(tmp_path) is None


def test_pass_at_k_and_task_choice():
    assert pass_at_k({"pass@16": 0.9, "pass@1": 0.5, "maj@1": 0.4, "n_samples": 16}) == {1: 0.5, 16: 0.9}
    assert pass_at_k(None) == {}
    assert pick_task({"gsm8k": {}, "mbpp": {}, "average": {}}, None) == "gsm8k"
    assert pick_task({"gsm8k": {}, "mbpp": {}}, "mbpp") == "mbpp"
    assert pick_task({"gsm8k": {}}, "math") is None


def test_starting_model_from_the_config_fit_writes(tmp_path):
    """`es-lightning fit` writes module as class_path/init_args; the reader must find the model there."""
    from es_lightning.cli import build_parser
    from tests.helpers import REPO

    parser = build_parser()
    cfg = parser.parse_args(["fit", "--config", str(REPO / "recipes" / "coverage_cpu_es.yaml")])
    dumped = parser._subcommands_action._name_parser_map["fit"].dump(cfg["fit"], skip_none=False)
    (tmp_path / "config.yaml").write_text(dumped)
    assert "init_args" in dumped
    assert starting_model(tmp_path) == "es-lightning/tiny-countdown"
    assert run_updates(tmp_path) == 120
