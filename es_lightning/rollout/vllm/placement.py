"""Where a vLLM engine runs: the cores its CPU worker binds to, the GPU it sees, its processes."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress


def engine_processes() -> list[int]:
    """Process ids of this process's ``VLLM::`` descendants (engine cores and workers)."""
    import psutil

    found = []
    for child in psutil.Process().children(recursive=True):
        with suppress(psutil.Error):
            if child.name().startswith("VLLM"):
                found.append(child.pid)
    return found


def end_processes(pids: Sequence[int], grace_s: float) -> None:
    """Wait up to ``grace_s`` for ``pids`` to exit, then SIGKILL the ones left."""
    import psutil

    processes = []
    for pid in pids:
        with suppress(psutil.Error):
            processes.append(psutil.Process(pid))
    _, alive = psutil.wait_procs(processes, timeout=grace_s)
    for process in alive:
        with suppress(psutil.Error):
            process.kill()
    psutil.wait_procs(alive, timeout=5.0)


def rank_cores(local_rank: int, local_world_size: int, cores: Sequence[int] | None = None) -> str:
    """The cores of rank ``local_rank``: ``cores`` split into contiguous near-equal shares."""
    cores = sorted(os.sched_getaffinity(0) if cores is None else cores)
    if not 0 <= local_rank < local_world_size:
        raise ValueError(f"local rank {local_rank} outside 0..{local_world_size - 1}")
    if local_world_size >= len(cores):
        return str(cores[local_rank % len(cores)])
    lo = local_rank * len(cores) // local_world_size
    hi = (local_rank + 1) * len(cores) // local_world_size
    return ",".join(str(c) for c in cores[lo:hi])


def local_rank() -> tuple[int, int]:
    """(local rank, ranks on this machine); (0, 1) outside a distributed run."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return 0, 1
    world = dist.get_world_size()
    # torchrun's LOCAL_WORLD_SIZE only: a started vLLM engine leaves LOCAL_WORLD_SIZE=1 in its
    # trainer's environment (and in every process started after it), whatever the ranks
    elastic = "TORCHELASTIC_RUN_ID" in os.environ and "LOCAL_WORLD_SIZE" in os.environ
    local_world = int(os.environ["LOCAL_WORLD_SIZE"]) if elastic else world
    return int(os.environ.get("LOCAL_RANK", dist.get_rank())) % local_world, local_world


def physical_gpu(index: int) -> str:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible:
        ids = [v.strip() for v in visible.split(",") if v.strip()]
        if index < len(ids):
            return ids[index]
    return str(index)


@contextmanager
def environment(values: Mapping[str, str]) -> Iterator[None]:
    """Set environment variables for the block, then put back what was there."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old
