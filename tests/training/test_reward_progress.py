"""The trainer's side of TRL's reward call: reward functions see the run's progress as
``trainer_state``, what they log with ``log_metric`` reaches ``metrics.jsonl`` as ``train/<name>``,
each function's reward is logged as ``train/rewards/<name>/mean`` and ``/std`` and the samples
carry it with the advantage, for ES and for GRPO, with three of TRL's documented reward functions
unchanged (in process, the tiny model, transformers rollouts)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from es_lightning.errors import ConfigError
from es_lightning.tasks.reward_context import MetricLog
from es_lightning.training.config import TrainerConfig
from es_lightning.training.loggers import read_metrics
from es_lightning.training.reward_progress import RewardProgress

SEEN: list[tuple[int, int, float]] = []


def digits_share(completions, completion_ids, trainer_state, log_metric, **kwargs):
    """Partial credit for digits; records what TRL's arguments held, logs a metric."""
    SEEN.append((trainer_state.global_step, trainer_state.max_steps, trainer_state.epoch))
    rewards = [sum(ch.isdigit() for ch in c) / max(len(c), 1) for c in completions]
    log_metric("tokens", sum(len(ids) for ids in completion_ids) / len(completion_ids))
    return rewards


def _single_rank(local_rank: int = 0) -> SimpleNamespace:
    return SimpleNamespace(world_size=1, is_global_zero=True, local_rank=local_rank)


def test_state_follows_the_updates_on_the_loggers_axis():
    config = TrainerConfig(batch_size=4, data_offset=2)
    progress = RewardProgress(_single_rank(), config, n_rows=16, max_steps=6, step_offset=10)
    state = progress.at(3)
    assert (state.step, state.global_step, state.max_steps) == (3, 13, 16)
    assert state.epoch == (2 + 3) * 4 / 16 and state.num_train_epochs == (2 + 6) * 4 / 16
    assert state.train_batch_size == 4 and state.is_world_process_zero


def test_logged_metrics_are_averaged_and_may_not_replace_ours():
    progress = RewardProgress(_single_rank(), TrainerConfig(), n_rows=4, max_steps=2, step_offset=None)
    log = MetricLog()
    for value in (1.0, 2.0, 6.0):
        log.add("accuracy", value)
    assert progress.logged(log, {"train/reward_mean": 0.5}) == {"train/accuracy": 3.0}
    log.add("reward_mean", 1.0)
    with pytest.raises(ConfigError, match="'reward_mean' would replace es-lightning's own train/reward_mean"):
        progress.logged(log, {"train/reward_mean": 0.5})


def _two_ranks(rank: int, port: int, out: str) -> None:
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    fabric = SimpleNamespace(world_size=2, is_global_zero=rank == 0, local_rank=rank)
    progress = RewardProgress(fabric, TrainerConfig(), n_rows=4, max_steps=1, step_offset=None)
    log = MetricLog()
    for value in [1.0, 3.0] if rank == 0 else [10.0]:  # rank 0: mean 2; rank 1: mean 10
        log.add("accuracy", value)
    if rank == 1:
        log.add("only_here", 5.0)  # a name one rank logged: averaged over the ranks that did
    got = progress.logged(log, {})
    if rank == 0:
        Path(out).write_text(json.dumps(got))
    dist.destroy_process_group()


@pytest.mark.integration
def test_logged_metrics_are_averaged_over_the_ranks(tmp_path):
    """Each rank's mean counts once (as TRL's gather), whatever names each rank logged."""
    import socket

    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "logged.json"
    mp.spawn(_two_ranks, args=(port, str(out)), nprocs=2, join=True)
    assert json.loads(out.read_text()) == {"train/accuracy": 6.0, "train/only_here": 5.0}


@pytest.mark.usefixtures("fresh_process_group")
@pytest.mark.parametrize("method", ["es", "grpo"])
def test_a_fit_from_a_dataset_gives_trainer_state_and_logs_each_functions_reward(
    method, tmp_path, tiny_model_path
):
    from datasets import Dataset

    from es_lightning import (
        ESStrategy,
        FunctionTask,
        GRPOStrategy,
        HFRollout,
        ReasoningModule,
        SamplingConfig,
        Trainer,
        TrainerConfig,
    )
    from tests.tasks.test_trl_reward_call import async_reward_func, logging_reward, reward_by_tokens

    rows = [{"prompt": f"Repeat: {1000 + 7 * i}", "ground_truth": str(1000 + 7 * i)} for i in range(8)]
    data = Dataset.from_list(rows)  # as TRL takes it
    # digits_share beside three of TRL's documented reward functions, unchanged
    functions = [digits_share, reward_by_tokens, logging_reward, async_reward_func]
    weights = [1.0, 0.1, 1.0, 0.5]
    module = ReasoningModule(
        model=str(tiny_model_path),
        task=FunctionTask(train=data, reward_funcs=functions, reward_weights=weights, name="digits"),
        train_sampling=SamplingConfig(temperature=1.0, max_tokens=6),
    )
    strategy = (
        ESStrategy(population_size=4, sigma=0.02, learning_rate=0.05)
        if method == "es"
        else GRPOStrategy(group_size=2, learning_rate=1e-3)
    )
    config = TrainerConfig(
        output_dir=str(tmp_path / "run"), max_steps=2, batch_size=4, accelerator="cpu", log_samples_every=1
    )
    SEEN.clear()
    Trainer(module, strategy, HFRollout(), config).fit()
    logged = [m for m in read_metrics(tmp_path / "run" / "metrics.jsonl") if "train/reward_mean" in m]
    assert [m["step"] for m in logged] == [1, 2]
    assert all(1 <= m["train/tokens"] <= 6 for m in logged)  # the mean token count of the completions
    names = [f.__name__ for f in functions]
    for m in logged:  # TRL's per-function rewards: every function scored every response, so
        weighted = sum(w * m[f"train/rewards/{n}/mean"] for w, n in zip(weights, names))
        assert weighted == pytest.approx(m["train/reward_mean"])  # the mean reward is their weighted sum
        assert m["train/rewards/reward_by_tokens/mean"] == pytest.approx(m["train/tokens"])  # completion_ids
        assert m["train/accuracy"] == m["train/rewards/logging_reward/mean"] == 0.0  # log_metric; no \boxed{}
        assert all(m[f"train/rewards/{n}/std"] >= 0 for n in names)
    from es_lightning.report.compare import run_settings

    settings = run_settings(tmp_path / "run", None)  # what `es-lightning compare` checks: config.yaml
    assert settings["model"] == str(tiny_model_path) and settings["task.init_args.name"] == "digits"
    assert settings["task.init_args.train"].startswith("a Dataset in memory (8 rows")
    samples = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert samples and all(set(s["rewards"]) == set(names) for s in samples)
    assert all(
        s["reward"] == pytest.approx(sum(w * s["rewards"][n] for w, n in zip(weights, names)))
        for s in samples
    )
    assert all(
        s["logged"]["golden_answer"] in s["prompt"] and s["logged"]["extracted_answer"] == "[none]"
        for s in samples
    )
    if method == "grpo":  # the advantage of each sample's response; ES: its member's z (or null: skipped)
        assert all(isinstance(s["advantage"], float) for s in samples)
    else:
        assert all(s["advantage"] is None or isinstance(s["advantage"], float) for s in samples)
        assert any(isinstance(s["advantage"], float) for s in samples)
    assert sorted({(g, n) for g, n, _ in SEEN}) == [(0, 2), (1, 2)]  # the updates before each one
    assert sorted({e for _, _, e in SEEN}) == [0.0, 0.5]  # 4 of 8 rows per update
