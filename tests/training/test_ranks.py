"""Two ranks on CPU (gloo): every rank takes part in checkpoints; a staged pipeline runs on 2 ranks."""

from __future__ import annotations

import json

import pytest

from es_lightning.checkpoint import Checkpoint
from es_lightning.training.loggers import read_metrics
from tests.helpers import REPO, fit

pytestmark = pytest.mark.integration

COLLECTIVE_GRPO = """
module:
  model: es-lightning/tiny-random
  task: {class_path: es_lightning.tasks.Echo, init_args: {length: 4, n_train: 16, n_test: 4}}
  train_sampling: {temperature: 1.0, max_tokens: 6}
strategy:
  class_path: tests.helpers.CollectiveGRPO
  init_args: {group_size: 4, learning_rate: 3.0e-3, micro_batch_size: 8}
rollout: {class_path: es_lightning.rollout.hf.HFRollout}
trainer: {batch_size: 4, seed: 5, accelerator: cpu, progress_bar: false, devices: 2, checkpoint_every: 1}
evaluation: null
"""


def test_every_rank_takes_part_in_every_checkpoint(tmp_path, monkeypatch):
    """The strategy's weight stream and state saving are collectives (as under FSDP): with only
    rank 0 saving, the run would hang in the first checkpoint."""
    record = tmp_path / "record"
    monkeypatch.setenv("ES_LIGHTNING_TEST_RECORD", str(record))
    out = fit(tmp_path, "collective", "--trainer.max_steps", "2", recipe=COLLECTIVE_GRPO, timeout=400)
    saved = sorted(p.name for p in record.iterdir())
    assert saved == [
        "rank0-.tmp-step-000001",
        "rank0-.tmp-step-000002",
        "rank1-.tmp-step-000001",
        "rank1-.tmp-step-000002",
    ]
    checkpoint = Checkpoint(out / "checkpoints" / "step-000002")
    assert checkpoint.strategy == "grpo" and (checkpoint.state_dir() / "fabric_state.ckpt").is_file()
    assert checkpoint.hparams()["strategy"]["group_size"] == 4


@pytest.mark.vllm
def test_two_stage_pipeline_on_two_ranks(tmp_path):
    """One launch for the whole pipeline: stage 2's Fabric reuses the processes and process group
    of stage 1 (see es_lightning.training.pipeline)."""
    recipe = (REPO / "recipes/smoke_cpu_es_then_grpo.yaml").read_text()
    overrides = ("--trainer.devices", "2", "--trainer.max_steps", "4", "--evaluation.num_samples", "2")
    out = fit(tmp_path, "pipe", *overrides, "--evaluation.ks", "[1, 2]", recipe=recipe, timeout=500)
    plan = json.loads((out / "pipeline.json").read_text())
    assert [s["updates"] for s in plan["stages"]] == [2, 2]
    es_ckpt = Checkpoint(out / "stage1_es" / "checkpoints" / "step-000002")
    grpo_ckpt = Checkpoint(out / "stage2_grpo" / "checkpoints" / "step-000002")
    assert es_ckpt.strategy == "es" and grpo_ckpt.strategy == "grpo"
    assert grpo_ckpt.state["source_model"] == str(es_ckpt.path)
    for stage in ("stage1_es", "stage2_grpo"):
        steps = [m["step"] for m in read_metrics(out / stage / "metrics.jsonl") if "train/reward_mean" in m]
        assert steps == [1, 2]  # rank 0 logs once per update: no duplicate processes
        assert (out / stage / "eval" / "after.json").is_file()
