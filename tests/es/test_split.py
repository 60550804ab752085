"""The split of an update's tensors over ranks and the exchange chunks, on hand-worked sizes."""

from __future__ import annotations

import pytest

from es_lightning.es.split import assign_tensors, chunk_names


def test_largest_first_to_the_least_loaded_rank():
    numels = {"emb": 100, "q": 40, "k": 40, "v": 30, "norm": 10}
    # loads (rank 0, rank 1): emb -> 0 (100, 0); q -> 1 (100, 40); k -> 1 (100, 80);
    # v -> 1 (100, 110); norm -> 0 (110, 110)
    assert assign_tensors(numels, 2) == {"emb": 0, "q": 1, "k": 1, "v": 1, "norm": 0}
    assert list(assign_tensors(numels, 2)) == list(numels)  # the master's order


def test_every_rank_computes_the_same_assignment_and_shares_are_balanced():
    numels = {f"layer{i}.w": 1000 + 37 * (i % 5) for i in range(24)} | {"emb": 5000}
    for world in (1, 2, 3, 4):
        owner = assign_tensors(numels, world)
        assert owner == assign_tensors(dict(numels), world)
        loads = [sum(n for name, n in numels.items() if owner[name] == r) for r in range(world)]
        assert set(owner.values()) == set(range(world))
        assert max(loads) - min(loads) <= max(numels.values())  # greedy: within one tensor
    assert set(assign_tensors(numels, 1).values()) == {0}
    with pytest.raises(ValueError, match="world_size"):
        assign_tensors(numels, 0)


def test_chunks_keep_the_order_and_the_bound():
    numels = {"a": 3, "b": 4, "c": 10, "d": 1, "e": 1}
    assert chunk_names(numels, 8) == [["a", "b"], ["c"], ["d", "e"]]  # c alone exceeds the bound
    assert chunk_names(numels, 100) == [["a", "b", "c", "d", "e"]]
    assert sum(chunk_names(numels, 1), []) == list(numels)
    with pytest.raises(ValueError, match="max_numbers"):
        chunk_names(numels, 0)
