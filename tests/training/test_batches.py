import numpy as np
import pytest

from es_lightning.training.batches import batch_indices, batch_rows, epoch_order, steps_for_epochs


def _concat(num_rows: int, batch_size: int, seed: int, steps: int) -> list[int]:
    return [i for step in range(steps) for i in batch_indices(num_rows, batch_size, seed, step)]


def test_pure_function_of_seed_and_step():
    first = [batch_indices(50, 8, seed=3, step=s) for s in range(10)]
    # Any order of calls, including a fresh "resumed" call for a late step, gives the same batches.
    assert batch_indices(50, 8, seed=3, step=7) == first[7]
    assert [batch_indices(50, 8, seed=3, step=s) for s in reversed(range(10))] == first[::-1]
    assert all(len(b) == 8 for b in first)
    assert all(isinstance(i, int) for b in first for i in b)


def test_epoch_order_is_a_permutation_and_epochs_differ():
    orders = [epoch_order(20, seed=0, epoch=e) for e in range(3)]
    for order in orders:
        assert sorted(order.tolist()) == list(range(20))
    assert orders[0].tolist() != orders[1].tolist()
    assert orders[1].tolist() != orders[2].tolist()
    assert orders[0].tolist() != list(range(20))  # shuffled, not the identity


def test_every_row_once_per_epoch_when_batch_divides_rows():
    rows, batch = 12, 4
    flat = _concat(rows, batch, seed=1, steps=9)  # three epochs
    for e in range(3):
        epoch = flat[e * rows : (e + 1) * rows]
        assert sorted(epoch) == list(range(rows))
        assert epoch == epoch_order(rows, 1, e).tolist()
    # step 3 is the first batch of epoch 1
    assert batch_indices(rows, batch, 1, 3) == epoch_order(rows, 1, 1).tolist()[:4]


def test_batches_straddle_epoch_boundaries():
    rows, batch = (
        10,
        4,
    )  # positions 0..19 over steps 0..4: step 2 covers [8, 12) = 2 rows of epoch 0, 2 of epoch 1
    flat = _concat(rows, batch, seed=5, steps=5)
    assert len(flat) == 20
    assert sorted(flat[:10]) == list(range(10))
    assert sorted(flat[10:]) == list(range(10))
    e0, e1 = epoch_order(rows, 5, 0).tolist(), epoch_order(rows, 5, 1).tolist()
    assert batch_indices(rows, batch, 5, 2) == e0[8:] + e1[:2]


def test_batch_larger_than_the_rows_spans_several_epochs():
    rows, batch = 3, 7  # step 0: all of epoch 0, all of epoch 1, first row of epoch 2
    first = batch_indices(rows, batch, seed=0, step=0)
    assert len(first) == 7
    assert sorted(first[:3]) == [0, 1, 2]
    assert sorted(first[3:6]) == [0, 1, 2]
    flat = _concat(rows, batch, seed=0, steps=3)  # 21 positions = exactly 7 epochs
    for e in range(7):
        assert sorted(flat[3 * e : 3 * e + 3]) == [0, 1, 2]


def test_different_seeds_differ():
    a = _concat(30, 10, seed=0, steps=3)
    b = _concat(30, 10, seed=1, steps=3)
    assert sorted(a) == sorted(b) == list(range(30))
    assert a != b


def test_batch_rows_picks_the_indexed_rows():
    rows = [{"id": i} for i in range(7)]
    for step in range(4):
        idx = batch_indices(7, 3, seed=2, step=step)
        assert batch_rows(rows, 3, seed=2, step=step) == [{"id": i} for i in idx]


def test_zero_rows_is_an_error():
    with pytest.raises(ValueError, match="no training rows"):
        batch_indices(0, 4, seed=0, step=0)
    with pytest.raises(ValueError, match="no training rows"):
        batch_rows([], 4, seed=0, step=0)


@pytest.mark.parametrize(
    ("num_rows", "batch_size", "epochs", "expected"),
    [
        (10, 5, 1, 2),  # exact
        (10, 4, 1, 3),  # 2.5 -> 3
        (10, 4, 2.5, 7),  # 6.25 -> 7
        (12, 5, 1.5, 4),  # 3.6 -> 4
        (8, 4, 0.5, 1),
        (100, 64, 0.01, 1),  # never fewer than one update
        (3, 1, 1, 3),
        (100, 2, 1.1, 55),  # 110 rows / 2 = 55 exactly (float arithmetic would give 56)
        (50, 1, 1.1, 55),
        (25, 1, 2.2, 55),
    ],
)
def test_steps_for_epochs(num_rows, batch_size, epochs, expected):
    assert steps_for_epochs(num_rows, batch_size, epochs) == expected


def test_steps_for_epochs_covers_the_requested_rows():
    rows, batch = 10, 4
    steps = steps_for_epochs(rows, batch, 1)
    assert set(_concat(rows, batch, seed=0, steps=steps)) == set(range(rows))
    assert np.unique(_concat(rows, batch, seed=0, steps=steps - 1)).size < rows
