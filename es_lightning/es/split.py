"""The update's tensors split between ranks (:func:`assign_tensors`, largest first to the least
loaded rank, a pure function every rank computes alike) and streamed in bounded chunks in the
master's order (:func:`chunk_names`).
"""

from __future__ import annotations

from collections.abc import Mapping


def assign_tensors(numels: Mapping[str, int], world_size: int) -> dict[str, int]:
    """The rank that computes each tensor's direction (greedy balance of the numbers to draw)."""
    if world_size < 1:
        raise ValueError(f"world_size must be >= 1, got {world_size}")
    load = [0] * world_size
    owner: dict[str, int] = {}
    order = sorted(enumerate(numels.items()), key=lambda item: (-item[1][1], item[0]))
    for _, (name, numel) in order:
        rank = min(range(world_size), key=lambda r: (load[r], r))
        owner[name] = rank
        load[rank] += int(numel)
    return {name: owner[name] for name in numels}  # in the given order


def chunk_names(numels: Mapping[str, int], max_numbers: int) -> list[list[str]]:
    """Consecutive groups of names with at most ``max_numbers`` numbers each (one tensor at least)."""
    if max_numbers < 1:
        raise ValueError(f"max_numbers must be >= 1, got {max_numbers}")
    chunks: list[list[str]] = []
    size = 0
    for name, numel in numels.items():
        if not chunks or (chunks[-1] and size + numel > max_numbers):
            chunks.append([])
            size = 0
        chunks[-1].append(name)
        size += int(numel)
    return chunks
