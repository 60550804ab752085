"""The shared reward metrics against NumPy, and the ragged gather on one rank and on two (gloo)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from es_lightning.strategies.metrics import gather_values, member_metrics, response_metrics, reward_metrics


def test_reward_metrics_equal_numpy():
    values = np.array([0.0, 1.0, 0.5, 0.25, 1.0])
    got = reward_metrics(torch.tensor(values, dtype=torch.float32).reshape(1, 5))
    assert got == pytest.approx(
        {
            "train/reward_mean": values.mean(),
            "train/reward_std": values.std(),
            "train/reward_max": 1.0,
            "train/reward_min": 0.0,
        }
    )
    with pytest.raises(ValueError, match="no rewards"):
        reward_metrics(np.array([]))


def test_member_and_response_metrics_equal_numpy():
    members = np.array([0.25, 0.5, 0.0, 0.75])
    assert member_metrics(members) == pytest.approx(
        {"es/member_reward_std": members.std(), "es/member_reward_max": 0.75, "es/member_reward_min": 0.0}
    )
    got = response_metrics(np.array([3, 8, 8, 1]), np.array([0, 1, 1, 0]))
    assert got == pytest.approx({"train/response_len": 5.0, "train/truncated_frac": 0.5})


class _OneRank:
    world_size = 1


def test_gather_on_one_rank_is_the_identity():
    assert gather_values(_OneRank(), torch.tensor([[1.0, 2.0], [3.0, 4.0]])).tolist() == [1.0, 2.0, 3.0, 4.0]


def _ragged(rank: int, world_size: int, port: int, out: list) -> None:
    import torch.distributed as dist
    from lightning.fabric.strategies import DDPStrategy

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world_size)

    class Ranked(DDPStrategy):
        @property
        def world_size(self) -> int:
            return world_size

        @property
        def root_device(self) -> torch.device:
            return torch.device("cpu")

    values = torch.arange(3 + rank, dtype=torch.float32) + 10 * rank  # rank 0: 3 values, rank 1: 4
    gathered = gather_values(Ranked(), values)
    if rank == 0:
        np.save(out[0], gathered)
    dist.destroy_process_group()


def test_gather_over_two_ranks_with_different_counts_keeps_every_value(tmp_path):
    import socket

    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    target = str(tmp_path / "gathered.npy")
    mp.spawn(_ragged, args=(2, port, [target]), nprocs=2, join=True)
    assert np.load(target).tolist() == [0.0, 1.0, 2.0, 10.0, 11.0, 12.0, 13.0]
