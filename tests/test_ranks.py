"""Ranks that fail together (:mod:`es_lightning.ranks`): real gloo process groups of 2 and 3
processes, where some ranks' blocks raise and the others must learn it instead of waiting."""

from __future__ import annotations

import socket

import pytest
import torch.distributed as dist
import torch.multiprocessing as mp

from es_lightning.errors import ConfigError
from es_lightning.ranks import PeerRankError, exit_status, fail_together, shared, started_by_fabric

pytestmark = pytest.mark.integration


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank(rank: int, world: int, port: int, failing: dict[int, str], results) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        outcome = []
        for round_ in range(2):  # after a clean round, the group is still in step
            try:
                with fail_together():
                    if round_ == 1 and rank in failing:
                        raise (ConfigError if failing[rank] == "user" else ZeroDivisionError)(f"rank {rank}")
                outcome.append("ok")
            except PeerRankError as peer:
                outcome.append(f"peer {peer.rank} status {peer.status}")
            except Exception as err:
                outcome.append(f"own {type(err).__name__} shared={shared(err)}")
        dist.barrier()  # every rank reached the end: nobody was left inside a collective
        results[rank] = outcome
    finally:
        dist.destroy_process_group()


def _run(world: int, failing: dict[int, str]) -> dict[int, list[str]]:
    results = mp.Manager().dict()
    mp.start_processes(
        _rank, args=(world, _free_port(), failing, results), nprocs=world, start_method="spawn"
    )
    return dict(results)


@pytest.mark.parametrize(
    ("world", "failing", "expected"),
    [
        (2, {}, {0: ["ok", "ok"], 1: ["ok", "ok"]}),
        (
            2,
            {1: "user"},
            {0: ["ok", "peer 1 status 2"], 1: ["ok", "own ConfigError shared=True"]},
        ),
        (
            3,
            {1: "bug", 2: "user"},  # the lowest failed rank is named, with the worst status (2 > 1)
            {
                0: ["ok", "peer 1 status 2"],
                1: ["ok", "own ZeroDivisionError shared=True"],
                2: ["ok", "own ConfigError shared=True"],
            },
        ),
    ],
)
def test_a_failure_on_some_ranks_reaches_every_rank(world, failing, expected):
    assert _run(world, failing) == expected


def test_one_process_runs_the_block_as_it_is():
    with pytest.raises(ZeroDivisionError) as raised, fail_together():
        raise ZeroDivisionError("alone")
    assert not shared(raised.value)


@pytest.mark.parametrize(
    ("env", "child"),
    [
        ({"LOCAL_RANK": "1"}, True),  # started by Fabric's launcher
        ({"LOCAL_RANK": "0"}, False),  # rank 0's own process
        ({}, False),
        ({"LOCAL_RANK": "1", "TORCHELASTIC_RUN_ID": "x"}, False),  # torchrun's rank
        ({"LOCAL_RANK": "1", "SLURM_PROCID": "1"}, False),
    ],
)
def test_exit_status_lets_rank_zero_carry_a_shared_failure(monkeypatch, env, child):
    for name in ("LOCAL_RANK", "TORCHELASTIC_RUN_ID", "SLURM_PROCID"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert started_by_fabric() is child
    assert exit_status(PeerRankError(0, 2), 2) == (0 if child else 2)
    assert exit_status(ValueError("not shared"), 1) == 1  # a failure the other ranks did not learn
