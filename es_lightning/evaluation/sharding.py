"""How an evaluation's prompts are split: into ``generate`` calls, and across ranks, a shard
starting only where one rank's sampling already restarts (:func:`shard_alignment`), so the samples
are a single rank's."""

from __future__ import annotations

import math
from typing import Any, TypeVar

from es_lightning.rollout.base import Rollout

T = TypeVar("T")
PROGRESS_CHUNKS = 10
"""About how many ``generate`` calls an evaluation's sampling is split into (the bar's steps)."""
MIN_CHUNK_SEQUENCES = 1024
"""The fewest sequences (prompts × M) per call to an engine that schedules its own batches (vLLM),
so that it keeps full batches."""


def shard_range(n_items: int, world_size: int, rank: int, align: int = 1) -> tuple[int, int]:
    """``rank``'s contiguous share ``[start, stop)`` of ``n_items``, cut only at multiples of
    ``align``: the ``ceil(n_items / align)`` blocks are dealt out in order, as evenly as possible
    (the first ranks get one more), and the last block may be short. Ranks may get nothing.

    >>> [shard_range(9, 2, r, align=2) for r in range(2)]  # 5 blocks: 3 + 2
    [(0, 6), (6, 9)]
    >>> [shard_range(1, 2, r) for r in range(2)]  # fewer items than ranks
    [(0, 1), (1, 1)]
    """
    if world_size < 1 or not 0 <= rank < world_size or align < 1 or n_items < 0:
        raise ValueError(f"shard_range: bad arguments {n_items=}, {world_size=}, {rank=}, {align=}")
    blocks = math.ceil(n_items / align)
    per_rank, extra = divmod(blocks, world_size)
    first = rank * per_rank + min(rank, extra)
    count = per_rank + int(rank < extra)
    return min(n_items, first * align), min(n_items, (first + count) * align)


def shard_alignment(rollout: Rollout, n_prompts: int, n: int) -> int:
    """Prompts per aligned block for ``n`` samples per prompt (see the module docstring)."""
    from es_lightning.rollout.vllm import VLLMRollout

    batch = getattr(rollout, "batch_size", None)
    if isinstance(batch, int) and batch > 0:
        return max(1, batch // n)
    if isinstance(rollout, VLLMRollout):
        return 1
    return chunk_size(n_prompts, n, rollout)


def chunk_size(n_prompts: int, n: int, rollout: Rollout) -> int:
    """Prompts per ``generate`` call: about ``n_prompts / PROGRESS_CHUNKS``, a multiple of a
    batching rollout's batch (so its batches are one call's), else at least
    :data:`MIN_CHUNK_SEQUENCES` sequences.

    >>> from es_lightning.rollout.hf import HFRollout
    >>> chunk_size(500, 32, HFRollout(batch_size=64))  # 50 prompts: 25 batches of 64 // 32 = 2
    50
    >>> chunk_size(500, 4, HFRollout(batch_size=64))  # 64 prompts: 4 batches of 16
    64
    """
    target = math.ceil(n_prompts / PROGRESS_CHUNKS)
    batch = getattr(rollout, "batch_size", None)
    if isinstance(batch, int) and batch > 0:
        per_call = max(1, batch // n)
        return max(1, math.ceil(target / per_call)) * per_call
    return max(1, target, math.ceil(MIN_CHUNK_SEQUENCES / n))


def gather_on_rank_zero(obj: T, world_size: int) -> list[T] | None:
    """Every rank's ``obj`` in rank order on rank 0 (``None`` elsewhere)."""
    if world_size == 1:
        return [obj]
    import torch.distributed as dist

    gathered: list[Any] | None = [None] * world_size if dist.get_rank() == 0 else None
    dist.gather_object(obj, gathered, dst=0)
    return gathered
