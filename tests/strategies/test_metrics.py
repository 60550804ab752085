"""The shared reward metrics against NumPy, and the ragged gather on one rank and on two (gloo)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from es_lightning.rollout.base import Completion, RolloutOutput
from es_lightning.strategies.metrics import (
    function_reward_metrics,
    gather_values,
    member_metrics,
    response_metrics,
    response_stats,
    reward_metrics,
    text_samples,
    with_advantages,
)
from es_lightning.tasks.base import Score


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


def test_each_reward_functions_mean_and_std_over_the_responses_it_scored():
    """As TRL: ``train/rewards/<fn>/mean`` and ``/std`` over the numbers a function returned (its
    ``None`` left out); a function that scored no response of the update is left out."""
    outputs = [
        RolloutOutput([1], [Completion("a", [5, 2], finish_reason="stop"), Completion("bb", [6, 7])]),
        RolloutOutput([1], [Completion("c", [8], finish_reason="stop")]),
    ]
    scores = [
        [
            Score(1.5, None, {"rewards/exact": 1.0, "rewards/brief": 0.5}),
            Score(0.0, None, {"rewards/brief": 0.0}),
        ],
        [Score(0.25, None, {"rewards/brief": 0.25})],
    ]
    rows = response_stats(outputs, scores, ["exact", "brief", "never"])
    assert [r[:3] for r in rows] == [(1.5, 2, False), (0.0, 2, True), (0.25, 1, False)]
    values = np.array([r[3:] for r in rows])
    assert values[0, 0] == 1.0 and math.isnan(values[1, 0]) and math.isnan(values[2, 0])
    got = function_reward_metrics(values, ["exact", "brief", "never"])
    brief = np.array([0.5, 0.0, 0.25])
    assert got == pytest.approx(
        {
            "train/rewards/exact/mean": 1.0,
            "train/rewards/exact/std": 0.0,
            "train/rewards/brief/mean": brief.mean(),
            "train/rewards/brief/std": brief.std(),
        }
    )
    assert function_reward_metrics(np.zeros((3, 0)), []) == {}
    assert response_stats(outputs, scores) == [r[:3] for r in rows]  # a task without functions


def test_text_samples_carry_each_functions_reward_the_logged_values_and_the_advantage():
    module = SimpleNamespace(format_prompt=lambda row: f"Q: {row['q']}")
    outputs = [RolloutOutput([1], [Completion("4", [3])]), RolloutOutput([1], [Completion("x", [4])])]
    scores = [
        [Score(1.0, None, {"rewards/exact": 1.0}, logged={"extracted": "4"})],
        [Score(0.0, None, {"rewards/exact": 0.0})],
    ]
    samples = text_samples(module, [{"q": "2+2"}, {"q": "1+1"}], outputs, scores, advantages=[0.7, -0.7])
    assert [(s.prompt, s.rewards, s.logged, s.advantage) for s in samples] == [
        ("Q: 2+2", {"exact": 1.0}, {"extracted": "4"}, 0.7),
        ("Q: 1+1", {"exact": 0.0}, {}, -0.7),
    ]
    es = text_samples(module, [{"q": "2+2"}], outputs, scores, member=2)
    assert es[0].advantage is None
    assert with_advantages(es, np.array([0.1, 0.2, -1.5]))[0].advantage == -1.5  # member 2's z
    assert with_advantages(es, None)[0].advantage is None  # a skipped update


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


@pytest.mark.integration
def test_gather_over_two_ranks_with_different_counts_keeps_every_value(tmp_path):
    import socket

    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    target = str(tmp_path / "gathered.npy")
    mp.spawn(_ragged, args=(2, port, [target]), nprocs=2, join=True)
    assert np.load(target).tolist() == [0.0, 1.0, 2.0, 10.0, 11.0, 12.0, 13.0]
