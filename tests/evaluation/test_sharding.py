"""An evaluation split into calls and across ranks: the chunks, the shares, and the same samples and
summaries as one rank."""

from __future__ import annotations

import doctest
import json
import subprocess
from collections import Counter

import numpy as np
import pytest
import torch

from es_lightning.evaluation import runner, sharding
from es_lightning.evaluation.runner import EvalConfig, evaluate_rows, evaluate_rows_sharded
from es_lightning.evaluation.sharding import chunk_size, shard_alignment, shard_range
from es_lightning.module import ReasoningModule
from es_lightning.rollout.base import Completion, Rollout, RolloutOutput
from es_lightning.rollout.hf import HFRollout
from es_lightning.rollout.vllm import VLLMRollout
from es_lightning.tasks import Echo
from es_lightning.training.loggers import read_metrics
from tests.helpers import CLI, generate_only_rollout, subprocess_env


def _reference_shares(n_items: int, world_size: int, align: int) -> list[tuple[int, int]]:
    """Blocks of ``align`` items dealt out with numpy's ``array_split`` (first ranks one more)."""
    blocks = [list(range(s, min(s + align, n_items))) for s in range(0, n_items, align)]
    shares = []
    for part in np.array_split(np.arange(len(blocks)), world_size):
        items = [i for b in part for i in blocks[b]]
        start = items[0] if items else (shares[-1][1] if shares else 0)
        shares.append((start, items[-1] + 1 if items else start))
    return shares


def test_shard_range_hand_worked():
    assert [shard_range(9, 2, r, align=2) for r in range(2)] == [(0, 6), (6, 9)]  # 5 blocks: 3 + 2
    assert [shard_range(10, 3, r, align=4) for r in range(3)] == [(0, 4), (4, 8), (8, 10)]
    assert [shard_range(7, 3, r) for r in range(3)] == [(0, 3), (3, 5), (5, 7)]
    assert [shard_range(1, 3, r) for r in range(3)] == [(0, 1), (1, 1), (1, 1)]  # fewer items than ranks
    assert [shard_range(5, 2, r, align=8) for r in range(2)] == [(0, 5), (5, 5)]  # one block: rank 0
    assert shard_range(0, 2, 1) == (0, 0)
    for bad in ((4, 0, 0, 1), (4, 2, 2, 1), (4, 2, 0, 0), (-1, 2, 0, 1)):
        with pytest.raises(ValueError):
            shard_range(*bad)


def test_doctests():
    assert doctest.testmod(sharding).failed == 0


def test_shard_range_matches_a_plain_reference():
    for n_items in range(0, 30):
        for world_size in range(1, 6):
            for align in range(1, 8):
                shares = [shard_range(n_items, world_size, r, align) for r in range(world_size)]
                assert shares == _reference_shares(n_items, world_size, align), (n_items, world_size, align)
                # contiguous, in rank order, covering every item once, cut at multiples of align
                assert shares[0][0] == 0 and shares[-1][1] == n_items
                assert all(a[1] == b[0] for a, b in zip(shares, shares[1:]))
                assert all(start % align == 0 or start == n_items for start, _ in shares)


def test_chunks_are_whole_batches_of_a_transformers_rollout_and_full_batches_for_others():
    assert chunk_size(500, 32, HFRollout(batch_size=64)) == 50  # 25 batches of 2 prompts
    assert chunk_size(500, 4, HFRollout(batch_size=64)) == 64  # 50 prompts rounded up to 4 batches of 16
    assert chunk_size(10, 4, HFRollout(batch_size=8)) == 2
    assert chunk_size(3, 64, HFRollout(batch_size=8)) == 1  # one prompt per batch when n > batch_size
    engine = generate_only_rollout()  # no batch_size: schedules its own batches, as vLLM does
    assert chunk_size(500, 32, engine) == 50
    assert chunk_size(40, 32, engine) == 32  # at least MIN_CHUNK_SEQUENCES = 1024 sequences
    assert chunk_size(1, 1, engine) == 1024


def test_alignment_is_the_batch_for_transformers_anywhere_for_vllm_else_the_chunk():
    hf = HFRollout(batch_size=8)
    assert [shard_alignment(hf, 100, n) for n in (1, 2, 3, 16)] == [8, 4, 2, 1]
    assert shard_alignment(VLLMRollout(), 100, 32) == 1  # prompt i is seeded with seed + i
    other = generate_only_rollout()
    assert shard_alignment(other, 500, 32) == chunk_size(500, 32, other) == 50


class CallSeeded(Rollout):
    """A rollout that seeds each *call* (not each prompt): its samples depend on where calls start,
    so only shards on the single-rank evaluation's chunks give the same samples."""

    def setup(self, model_path, device, dtype): ...

    def generate(self, prompts, sampling):
        g = torch.Generator().manual_seed(sampling.seed or 0)
        outputs = []
        for p in prompts:
            texts = [str(int(torch.randint(0, 3, (1,), generator=g))) for _ in range(sampling.n)]
            completions = [
                Completion(text=t, token_ids=[len(p)] * (1 + int(t)), finish_reason="stop") for t in texts
            ]
            outputs.append(RolloutOutput(prompt_token_ids=list(p), completions=completions))
        return outputs

    def load_weights(self, named_tensors): ...

    def checksum(self):
        return 0.0

    def digest(self):
        return ""


def _sharded(module, rollout, rows, config, world_size, monkeypatch):
    """Rank 0's result of :func:`evaluate_rows_sharded` on ``world_size`` ranks run one after the
    other in this process (ranks 1, 2, ... first): the gather hands rank 0 what the others sent."""
    sent = []

    def gather(obj, ws):
        if len(sent) < ws - 1:  # ranks 1 .. W-1
            sent.append(obj)
            return None
        return [obj, *sent]

    with monkeypatch.context() as patch:
        patch.setattr(runner, "gather_on_rank_zero", gather)
        for rank in range(1, world_size):
            assert (
                evaluate_rows_sharded(module, rollout, rows, config, rank=rank, world_size=world_size) is None
            )
        return evaluate_rows_sharded(module, rollout, rows, config, rank=0, world_size=world_size)


@pytest.mark.parametrize("n_test", [1, 5, 9])
def test_sharded_evaluation_equals_one_rank_in_process(tiny_model_path, monkeypatch, n_test):
    task = Echo(length=4, n_train=4, n_test=n_test)
    module = ReasoningModule(model=str(tiny_model_path), task=task)
    rows = task.load("test")
    hf = HFRollout(batch_size=4)  # M = 2: 2 prompts per batch; greedy: 4
    hf.setup(str(tiny_model_path), torch.device("cpu"), torch.float32)
    config = EvalConfig(num_samples=2, temperature=1.0, max_tokens=5, ks=[1, 2], seed=7)
    for rollout in (hf, CallSeeded()):
        whole = evaluate_rows(module, rollout, rows, config)
        for world_size in (2, 3):
            shared = _sharded(module, rollout, rows, config, world_size, monkeypatch)
            assert shared.summary == whole.summary, (type(rollout).__name__, world_size)
            assert shared.completions == whole.completions and shared.greedy == whole.greedy
            assert shared.rewards == whole.rewards and shared.greedy_rewards == whole.greedy_rewards
    hf.close()


RECIPE = """
module:
  model: es-lightning/tiny-random
  task: {class_path: es_lightning.tasks.Echo, init_args: {length: 4, n_train: 8, n_test: 9}}
  train_sampling: {temperature: 1.0, max_tokens: 6}
strategy:
  class_path: es_lightning.strategies.ESStrategy
  init_args: {population_size: 2, sigma: 0.05, learning_rate: 0.05}
rollout: {class_path: tests.evaluation.recording.RecordingHFRollout, init_args: {batch_size: 4}}
trainer: {batch_size: 2, seed: 3, accelerator: cpu, progress_bar: false, max_steps: 0, eval_after: false}
evaluation: {num_samples: 2, temperature: 1.0, max_tokens: 6, ks: [1, 2], seed: 7}
eval_tasks:
  echo: {class_path: es_lightning.tasks.Echo, init_args: {length: 4, n_train: 8, n_test: 9}}
  single: {class_path: es_lightning.tasks.Echo, init_args: {length: 3, n_train: 8, n_test: 1}}
callbacks:
  - class_path: es_lightning.callbacks.HeldOutPassAtK
    init_args:
      tasks: {held: {class_path: es_lightning.tasks.Echo, init_args: {length: 5, n_test: 5}}}
      evaluation: {num_samples: 3, max_tokens: 7, ks: [1, 3], seed: 11}
"""
"""Evaluated prompts (batch 4): held 5 at M = 3 (blocks of 1; greedy 4), echo 9 at M = 2 (blocks of
2; greedy 4), single 1 (fewer prompts than ranks)."""
EVAL_FILES = (
    "eval/before.json",
    "eval/before_echo_completions.jsonl",
    "eval/before_single_completions.jsonl",
    "heldout/step-000000.json",
    "heldout/step-000000_held_completions.jsonl",
)


def _prompts_by_n(record):
    counts = Counter()
    for line in record.read_text().splitlines():
        call = json.loads(line)
        counts[call["n"]] += call["prompts"]
    return dict(counts)


def _start_fit(tmp_path, config, devices):
    """``es-lightning fit`` on ``devices`` CPU ranks into ``tmp_path/ranks{devices}``, each rank
    recording its generate calls under ``tmp_path/record{devices}``; returns (output dir, process)."""
    out = tmp_path / f"ranks{devices}"
    cmd = [*CLI, "fit", "--config", str(config), "--trainer.output_dir", str(out)]
    env = subprocess_env() | {
        "OMP_NUM_THREADS": "1",  # the same CPU kernels in every process
        "ES_LIGHTNING_TEST_RECORD": str(tmp_path / f"record{devices}"),
    }
    proc = subprocess.Popen(
        [*cmd, "--trainer.devices", str(devices)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return out, proc


@pytest.mark.integration
def test_two_ranks_write_and_log_what_one_rank_does(tmp_path):
    """ES on 2 CPU ranks (gloo), no updates: the trainer's evaluation and the held-out callback
    split the prompts (uneven, and one task with fewer prompts than ranks) and rank 0 writes and
    logs byte for byte what a 1-rank run writes."""
    config = tmp_path / "recipe.yaml"
    config.write_text(RECIPE)
    runs = {devices: _start_fit(tmp_path, config, devices) for devices in (1, 2)}  # side by side
    logs = {}
    for devices, (_, proc) in runs.items():
        logs[devices] = proc.communicate(timeout=300)[0]
        assert proc.returncode == 0, logs[devices][-3000:]
    one, two = runs[1][0], runs[2][0]
    for name in EVAL_FILES:
        assert (one / name).read_bytes() == (two / name).read_bytes(), name

    def logged(out):
        return [
            m
            for m in read_metrics(out / "metrics.jsonl")
            if any(k.startswith(("eval/", "heldout/")) for k in m)
        ]

    assert logged(one) == logged(two) and len(logged(one)) == 4  # held, echo, single, the average
    assert [line for line in logs[1].splitlines() if line.startswith("evaluating ")] == [
        line for line in logs[2].splitlines() if line.startswith("evaluating ")
    ]  # announced once, by rank 0
    # the shares: rank 1 took held [3, 5) and greedy [4, 5), echo [6, 9) and greedy [8, 9), no single
    assert _prompts_by_n(tmp_path / "record2" / "rank1.jsonl") == {3: 2, 2: 3, 1: 2}
    assert _prompts_by_n(tmp_path / "record2" / "rank0.jsonl") == {3: 3, 2: 7, 1: 13}
    assert _prompts_by_n(tmp_path / "record1" / "rank0.jsonl") == {3: 5, 2: 10, 1: 15}
    assert not (tmp_path / "record1" / "rank1.jsonl").exists()
