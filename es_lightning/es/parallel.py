"""Per-tensor ES work (noise, perturbation, update) spread over CPU threads, results in order.

Every tensor has its own generator and torch releases the GIL while filling, so
:func:`map_tensors` draws tensors on several threads and yields them in input order: bit-identical
to a serial loop. Each thread re-asserts the process's cores before every tensor (a pinned OpenMP
runtime would keep it on one core). CUDA tensors run serially.
"""

from __future__ import annotations

import contextlib
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import torch

R = TypeVar("R")

_pools: dict[int, tuple[ThreadPoolExecutor, frozenset[int]]] = {}


def tensor_threads() -> int:
    """Threads :func:`map_tensors` uses for CPU tensors (torch's intra-op thread count)."""
    return max(1, torch.get_num_threads())


def _process_cores() -> set[int]:
    """Every core some thread of this process may run on."""
    cores: set[int] = set()
    try:
        for tid in os.listdir("/proc/self/task"):
            with contextlib.suppress(OSError):  # the thread ended
                cores |= os.sched_getaffinity(int(tid))
    except (OSError, AttributeError):  # not Linux
        return set()
    return cores


def _spread(cores: frozenset[int]) -> None:
    """Set up a pool thread: one torch thread of its own (the pool is the parallelism), any of ``cores``."""
    torch.set_num_threads(1)  # per thread: OpenMP's thread count is the calling thread's setting
    if cores:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, cores)  # 0: the calling thread


def _on_cores(
    cores: frozenset[int], fn: Callable[[str, torch.Tensor], R], name: str, tensor: torch.Tensor
) -> R:
    """``fn(name, tensor)`` on a pool thread allowed on ``cores`` again."""
    if cores and os.sched_getaffinity(0) != cores:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, cores)
    with torch.no_grad():
        return fn(name, tensor)


def _pool(threads: int) -> tuple[ThreadPoolExecutor, frozenset[int]]:
    entry = _pools.get(threads)
    if entry is None:
        cores = frozenset(_process_cores())
        pool = ThreadPoolExecutor(
            threads, thread_name_prefix="es-tensors", initializer=_spread, initargs=(cores,)
        )
        entry = _pools[threads] = (pool, cores)
    return entry


def map_tensors(
    fn: Callable[[str, torch.Tensor], R],
    items: Iterable[tuple[str, torch.Tensor]],
    threads: int | None = None,
) -> Iterator[R]:
    """``fn(name, tensor)`` for every item, yielded in input order, CPU tensors on ``threads``
    threads with at most ``2 × threads`` pending; an exception is raised at its item's turn."""
    threads = tensor_threads() if threads is None else max(1, int(threads))
    pending: deque = deque()
    for name, tensor in items:
        if threads == 1 or tensor.device.type != "cpu":
            while pending:  # keep the order: results of earlier items first
                yield pending.popleft().result()
            yield fn(name, tensor)
            continue
        pool, cores = _pool(threads)
        pending.append(pool.submit(_on_cores, cores, fn, name, tensor))
        if len(pending) >= 2 * threads:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()
