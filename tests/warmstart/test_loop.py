import torch

from scripts.warmstart.common import epoch_queue


def test_epoch_queue_takes_epochs_of_fresh_permutations_in_order():
    take = epoch_queue(4, torch.Generator().manual_seed(3))
    taken = [take(3) for _ in range(4)]  # 12 indices: exactly 3 epochs of 4
    reference = torch.Generator().manual_seed(3)  # the naive loop: one randperm per epoch
    expected = [i for _ in range(3) for i in torch.randperm(4, generator=reference).tolist()]
    assert [i for batch in taken for i in batch] == expected
    assert all(sorted(expected[4 * e : 4 * e + 4]) == [0, 1, 2, 3] for e in range(3))
    spanning = epoch_queue(2, torch.Generator().manual_seed(0))(5)  # one batch over three epochs
    assert len(spanning) == 5 and sorted(spanning[:2]) == sorted(spanning[2:4]) == [0, 1]
