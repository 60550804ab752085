"""Where an engine runs: each rank's share of the cores, and the environment it starts with."""

from __future__ import annotations

import os

import pytest

from es_lightning.rollout.vllm.placement import environment, rank_cores


def _reference_shares(cores: list[int], ranks: int) -> list[list[int]]:
    """Contiguous shares whose sizes differ by at most one, in core order."""
    if ranks >= len(cores):
        return [[cores[r % len(cores)]] for r in range(ranks)]
    base, extra = divmod(len(cores), ranks)
    sizes = sorted([base + 1] * extra + [base] * (ranks - extra))  # smaller shares first
    shares, at = [], 0
    for size in sizes:
        shares.append(cores[at : at + size])
        at += size
    return shares


@pytest.mark.parametrize("n_cores", [1, 2, 3, 8, 16])
@pytest.mark.parametrize("ranks", [1, 2, 3, 4])
def test_rank_cores_splits_the_cores_into_contiguous_even_shares(n_cores, ranks):
    cores = list(range(4, 4 + n_cores))  # not starting at 0, as under a cgroup or taskset
    got = [[int(c) for c in rank_cores(r, ranks, cores).split(",")] for r in range(ranks)]
    assert got == _reference_shares(cores, ranks)
    if ranks <= n_cores:
        assert sorted(c for share in got for c in share) == cores  # every core used once


def test_rank_cores_defaults_to_the_cores_this_process_may_use():
    assert rank_cores(0, 1) == ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))


def test_rank_cores_refuses_a_rank_outside_the_world():
    with pytest.raises(ValueError, match="local rank 2 outside 0..1"):
        rank_cores(2, 2, [0, 1])


def test_environment_is_put_back_after_the_block(monkeypatch):
    monkeypatch.setenv("ES_PLACEMENT_KEPT", "before")
    monkeypatch.delenv("ES_PLACEMENT_NEW", raising=False)
    with environment({"ES_PLACEMENT_KEPT": "inside", "ES_PLACEMENT_NEW": "1"}):
        assert os.environ["ES_PLACEMENT_KEPT"] == "inside" and os.environ["ES_PLACEMENT_NEW"] == "1"
    assert os.environ["ES_PLACEMENT_KEPT"] == "before" and "ES_PLACEMENT_NEW" not in os.environ


def test_threads_bind_prefers_the_option_then_the_variable_then_the_share(monkeypatch):
    from es_lightning.rollout.vllm import VLLMRollout

    monkeypatch.delenv("VLLM_CPU_OMP_THREADS_BIND", raising=False)
    assert VLLMRollout().threads_bind() == "auto"  # one rank: vLLM's choice, a core for its front end
    assert VLLMRollout(cpu_threads_bind="0-1").threads_bind() == "0-1"
    monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", "1")
    assert VLLMRollout().threads_bind() == "1"
    assert VLLMRollout(cpu_threads_bind="0").threads_bind() == "0"


@pytest.mark.vllm
def test_a_single_rank_engine_leaves_a_core_to_its_front_end(vllm_engine):
    """One rank: vLLM's ``auto`` binding, the worker's compute threads pinned one per core on all
    but one of the cores (measured faster for small models than a worker on every core, whose
    pinned threads then share a core with the engine's busy front end)."""
    import psutil

    if os.environ.get("VLLM_CPU_OMP_THREADS_BIND"):
        pytest.skip("VLLM_CPU_OMP_THREADS_BIND is set for this session")
    cores = set(os.sched_getaffinity(0))
    workers = [psutil.Process(pid) for pid in vllm_engine.engine_pids]
    workers = [p for p in workers if p.name().startswith("VLLM::Worker")]
    assert workers, f"no VLLM::Worker among {vllm_engine.engine_pids}"
    bound = set()
    for thread in workers[0].threads():
        affinity = os.sched_getaffinity(thread.id)
        if len(affinity) == 1:  # an OpenMP compute thread, pinned to its core
            bound |= affinity
    assert bound and bound <= cores
    if len(cores) >= 2:
        assert bound != cores  # one core left for the front end
    assert "VLLM_CPU_OMP_THREADS_BIND" not in os.environ, "the engine's binding leaked into this process"


def _rank_share(rank: int, port: int, queue) -> None:  # a spawned process: one rank of two
    import torch.distributed as dist

    from es_lightning.rollout.vllm import VLLMRollout

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), LOCAL_RANK=str(rank))
    os.environ["LOCAL_WORLD_SIZE"] = "1"  # what a vLLM engine started earlier leaves behind
    os.environ.pop("TORCHELASTIC_RUN_ID", None)
    os.environ.pop("VLLM_CPU_OMP_THREADS_BIND", None)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    try:
        queue.put(
            (
                rank,
                VLLMRollout().threads_bind(),
                VLLMRollout(engine_kwargs={"tensor_parallel_size": 2}).threads_bind(),
            )
        )
    finally:
        dist.destroy_process_group()


@pytest.mark.integration
def test_each_of_two_ranks_binds_its_engine_to_its_own_cores():
    import socket

    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_rank_share, args=(r, port, queue)) for r in range(2)]
    for p in procs:
        p.start()
    got = {rank: (bind, tp) for rank, bind, tp in (queue.get(timeout=120) for _ in procs)}
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert {r: bind for r, (bind, _) in got.items()} == {r: rank_cores(r, 2) for r in range(2)}
    if len(os.sched_getaffinity(0)) >= 2:
        assert set(got[0][0].split(",")).isdisjoint(got[1][0].split(","))
    for bind, tp in got.values():  # a rank's share, split again per tensor-parallel worker
        share = [int(c) for c in bind.split(",")]
        assert tp.split("|") == [rank_cores(i, 2, share) for i in range(2)]
