"""Real GRPO runs and pipelines through the CLI: exact resume, two stages, the smoke recipes."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file

from es_lightning.training.loggers import read_metrics
from tests.helpers import REPO, fit
from tests.helpers import assert_bit_identical as _assert_bit_identical

pytestmark = pytest.mark.integration


def _fit(tmp_path, name, *overrides, recipe):
    return fit(tmp_path, name, *overrides, recipe=recipe)


GRPO_RECIPE = """
module:
  model: es-lightning/tiny-random
  task: {class_path: es_lightning.tasks.Echo, init_args: {length: 4, n_train: 16, n_test: 4}}
  train_sampling: {temperature: 1.0, max_tokens: 6}
strategy:
  class_path: es_lightning.strategies.GRPOStrategy
  init_args: {group_size: 4, learning_rate: 3.0e-3, micro_batch_size: 8}
rollout: {class_path: es_lightning.rollout.hf.HFRollout}
trainer: {batch_size: 4, seed: 5, accelerator: cpu, progress_bar: false}
evaluation: null
"""


def _state(out, step):
    folder = out / "checkpoints" / f"step-{step:06d}" / "grpo_state"
    fabric_state = torch.load(folder / "fabric_state.ckpt", weights_only=True)
    master = load_file(folder / "master.safetensors")
    # the streamed master is the trainer model (whose state dict also lists the tied lm_head)
    _assert_bit_identical(master, {k: fabric_state["model"][k] for k in master})
    return master, fabric_state["optimizer"]


def test_grpo_resume_is_bit_exact(tmp_path):
    straight = _fit(tmp_path, "straight", "--trainer.max_steps", "4", recipe=GRPO_RECIPE)
    resumed = _fit(tmp_path, "resumed", "--trainer.max_steps", "2", recipe=GRPO_RECIPE)
    _fit(tmp_path, "resumed", "--trainer.max_steps", "4", "--trainer.resume", "true", recipe=GRPO_RECIPE)
    (w1, o1), (w2, o2) = _state(straight, 4), _state(resumed, 4)
    _assert_bit_identical(w1, w2)
    for key, s1 in o1["state"].items():
        for name in ("exp_avg", "exp_avg_sq", "step"):
            assert torch.equal(s1[name], o2["state"][key][name])
    r1 = [m["train/reward_mean"] for m in read_metrics(straight / "metrics.jsonl")]
    r2 = [m["train/reward_mean"] for m in read_metrics(resumed / "metrics.jsonl")]
    assert r1 == r2


def test_two_stage_pipeline_writes_both_stages_and_resumes(tmp_path):
    recipe = (REPO / "recipes/smoke_cpu_es_then_grpo.yaml").read_text()
    overrides = (
        "--trainer.max_steps",
        "4",
        "--rollout",
        "es_lightning.rollout.hf.HFRollout",
        "--evaluation.num_samples",
        "2",
        "--evaluation.ks",
        "[1, 2]",
    )
    out = _fit(tmp_path, "pipe", *overrides, recipe=recipe)
    plan = json.loads((out / "pipeline.json").read_text())
    assert plan["pipeline"] == "es_then_grpo" and [st["updates"] for st in plan["stages"]] == [2, 2]
    es_ckpt = out / "stage1_es" / "checkpoints" / "step-000002"
    grpo_ckpt = out / "stage2_grpo" / "checkpoints" / "step-000002"
    assert (es_ckpt / "es_state" / "master.safetensors").is_file()
    assert (grpo_ckpt / "grpo_state" / "master.safetensors").is_file()
    assert json.loads((grpo_ckpt / "trainer_state.json").read_text())["source_model"] == str(es_ckpt)
    for stage in ("stage1_es", "stage2_grpo"):
        assert (out / stage / "eval" / "after.json").is_file()
    assert (out / "stage1_es" / "eval" / "before.json").is_file()
    assert not (out / "stage2_grpo" / "eval" / "before.json").exists()
    # stage 2 continues the data order where stage 1 stopped, and learning happened in stage 2
    assert [
        m["step"] for m in read_metrics(out / "stage2_grpo/metrics.jsonl") if "train/reward_mean" in m
    ] == [1, 2]
    # resuming a finished pipeline does nothing new
    before = (out / "stage2_grpo/metrics.jsonl").read_text()
    _fit(tmp_path, "pipe", *overrides, "--trainer.resume", "true", recipe=recipe)
    assert (out / "stage2_grpo/metrics.jsonl").read_text() == before


@pytest.mark.vllm
def test_grpo_smoke_recipe_raises_reward_and_lowers_entropy_through_vllm(tmp_path):
    out = _fit(
        tmp_path,
        "grpo",
        "--trainer.max_steps",
        "12",
        recipe=(REPO / "recipes/smoke_cpu_grpo.yaml").read_text(),
    )
    train = [m for m in read_metrics(out / "metrics.jsonl") if "train/reward_mean" in m]
    rewards = [m["train/reward_mean"] for m in train]
    entropy = [m["train/entropy"] for m in train]
    assert sum(rewards[-3:]) / 3 > sum(rewards[:3]) / 3 + 0.05, rewards
    assert entropy[-1] < entropy[0]
    assert (out / "eval" / "after.json").is_file()


def test_grpo_learning_rate_follows_warmup_and_linear_decay(tmp_path):
    """The optimizer's learning rate per update, as logged (`train/lr`): W=1 warmup of T=4 steps."""
    out = _fit(
        tmp_path,
        "sched",
        "--trainer.max_steps",
        "4",
        "--strategy.init_args.lr_schedule",
        "linear",
        "--strategy.init_args.warmup_steps",
        "1",
        recipe=GRPO_RECIPE,
    )
    lrs = [m["train/lr"] for m in read_metrics(out / "metrics.jsonl") if "train/lr" in m]
    assert lrs == pytest.approx([0.0, 3.0e-3, 2.0e-3, 1.0e-3])
