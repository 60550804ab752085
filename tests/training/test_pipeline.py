"""Budget split and naming of sequential pipelines."""

from __future__ import annotations

import pytest

from es_lightning.strategies import ESStrategy, GRPOStrategy
from es_lightning.training.pipeline import Stage, pipeline_name, split_budget, stage_names


def test_split_budget_rounds_and_gives_the_remainder_to_the_last_stage():
    halves = [Stage(ESStrategy()), Stage(GRPOStrategy())]
    assert split_budget(10, halves) == [5, 5]
    assert split_budget(11, halves) == [6, 5]  # round(5.5) = 6 (banker's rounding gives 6 too)
    thirds = [Stage(ESStrategy(), 0.3), Stage(GRPOStrategy(), 0.3), Stage(ESStrategy(), 0.4, name="es2")]
    assert split_budget(10, thirds) == [3, 3, 4]


@pytest.mark.parametrize(
    ("fractions", "total", "match"),
    [([0.5, 0.4], 10, "add up to 1"), ([1.0, 0.0], 10, "positive"), ([0.5, 0.5], 1, "none")],
)
def test_split_budget_errors(fractions, total, match):
    stages = [Stage(ESStrategy(), f) for f in fractions]
    with pytest.raises(ValueError, match=match):
        split_budget(total, stages)


def test_names():
    stages = [Stage(GRPOStrategy()), Stage(ESStrategy())]
    assert stage_names(stages) == ["grpo", "es"]
    assert pipeline_name(stage_names(stages)) == "grpo_then_es"


PIPELINE_RECIPE = """
module:
  model: es-lightning/tiny-random
  task: {class_path: es_lightning.tasks.Echo, init_args: {length: 4, n_train: 16, n_test: 4}}
  train_sampling: {temperature: 1.0, max_tokens: 6}
stages:
  - strategy:
      class_path: es_lightning.strategies.ESStrategy
      init_args: {population_size: 4, sigma: 0.05, learning_rate: 0.05}
    train_sampling: {temperature: 0.0, max_tokens: 6}
  - strategy:
      class_path: es_lightning.strategies.GRPOStrategy
      init_args: {group_size: 4, learning_rate: 3.0e-3, micro_batch_size: 8}
rollout: {class_path: es_lightning.rollout.hf.HFRollout}
trainer: {batch_size: 4, seed: 3, accelerator: cpu, progress_bar: false, max_steps: 4, checkpoint_every: 1,
          log_samples_every: 1}
evaluation: {num_samples: 2, ks: [1, 2], max_tokens: 6}
"""
"""Two stages of 2 updates each, HF rollouts on the tiny model (seconds per update)."""


def _tensorboard(folder):
    """A TensorBoard run as the server reads it (scalars and text as tensors, a resume's purge done)."""
    from tensorboard.backend.event_processing import plugin_event_accumulator as tb

    acc = tb.EventAccumulator(str(folder), size_guidance={tb.TENSORS: 0})
    acc.Reload()
    return acc


def _steps(acc, tag):
    return [e.step for e in acc.Tensors(tag)]


@pytest.mark.integration
def test_a_pipeline_logs_on_one_step_axis_and_a_killed_run_resumes_on_it_without_repeats(tmp_path):
    import json
    import subprocess

    from es_lightning.training.loggers import read_metrics
    from tests.helpers import CLI, fit, subprocess_env

    # killed right after update 2 of stage 2 (global 4) is logged, before its checkpoint
    killed = (
        PIPELINE_RECIPE
        + "callbacks: [{class_path: tests.training.faults.KillAfterUpdate, init_args: {global_step: 4}}]\n"
    )
    (tmp_path / "killed.yaml").write_text(killed)
    out = tmp_path / "pipe"
    cmd = [*CLI, "fit", "--config", str(tmp_path / "killed.yaml"), "--trainer.output_dir", str(out)]
    proc = subprocess.run(
        cmd, cwd=tmp_path, env=subprocess_env(), capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == -9, proc.stdout[-3000:] + proc.stderr[-3000:]
    stage2 = out / "stage2_grpo"
    assert [r["step"] for r in read_metrics(stage2 / "metrics.jsonl") if "train/reward_mean" in r] == [1, 2]
    assert 4 in _steps(_tensorboard(out / "tensorboard"), "train/reward_mean")  # what the resume must drop
    fit(tmp_path, "pipe", "--trainer.resume", "true", recipe=PIPELINE_RECIPE)

    root = _tensorboard(out / "tensorboard")  # `tensorboard --logdir pipe/tensorboard`: one run
    assert _steps(root, "train/reward_mean") == [1, 2, 3, 4]
    assert _steps(root, "samples/text_summary") == [1, 2, 3, 4]
    assert _steps(root, "eval/echo/pass@1") == [0, 2, 4]  # before, after stage 1, after stage 2
    assert "es/update_norm" in root.Tags()["tensors"] and "grpo/kl" in root.Tags()["tensors"]
    assert _steps(_tensorboard(out / "stage1_es" / "tensorboard"), "train/reward_mean") == [1, 2]
    assert _steps(_tensorboard(stage2 / "tensorboard"), "train/reward_mean") == [3, 4]

    for stage, offset in (("stage1_es", 0), ("stage2_grpo", 2)):  # stage-local steps for resume + global
        train = [r for r in read_metrics(out / stage / "metrics.jsonl") if "train/reward_mean" in r]
        assert [(r["step"], r["global_step"]) for r in train] == [(1, offset + 1), (2, offset + 2)]
        samples = [json.loads(line) for line in (out / stage / "samples.jsonl").read_text().splitlines()]
        assert sorted({(r["step"], r["global_step"]) for r in samples}) == [(1, offset + 1), (2, offset + 2)]
    logged = {e.step: e.tensor_proto.float_val[0] for e in root.Tensors("train/reward_mean")}
    train = [r for r in read_metrics(stage2 / "metrics.jsonl") if "train/reward_mean" in r]
    assert [logged[r["global_step"]] for r in train] == pytest.approx([r["train/reward_mean"] for r in train])
