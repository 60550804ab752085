"""The permuted-reward control: a replayable permutation, and no signal in expectation."""

from __future__ import annotations

import numpy as np
import pytest

from es_lightning.es.control import control_permutation, controlled_rewards
from es_lightning.es.normalize import normalize_rewards

PINNED = (7, 3, 8)
"""(run_seed, step, n) whose permutation is pinned below: a change of it breaks resuming old runs."""


def test_permutation_is_a_pure_function_of_run_seed_and_step():
    perm = control_permutation(*PINNED)
    assert sorted(perm.tolist()) == list(range(8))
    assert np.array_equal(perm, control_permutation(*PINNED))
    # pinned: any process (a resumed run) draws this permutation (BLAKE2b keys, no salted hash)
    assert perm.tolist() == [7, 0, 3, 2, 4, 1, 6, 5]


def test_permutations_change_with_step_and_run_seed():
    perms = {tuple(control_permutation(0, step, 8)) for step in range(50)}
    assert len(perms) > 45  # 8! = 40,320 permutations: repeats are rare
    assert not np.array_equal(control_permutation(0, 1, 16), control_permutation(1, 1, 16))


def test_controlled_rewards():
    rewards = np.array([0.1, 0.5, 0.9, 0.3])
    assert np.array_equal(controlled_rewards(rewards, "none", 4, 2), rewards)
    perm = control_permutation(4, 2, 4)
    shuffled = controlled_rewards(rewards, "permuted", 4, 2)
    assert [shuffled[i] for i in range(4)] == [rewards[perm[i]] for i in range(4)]
    assert sorted(shuffled) == sorted(rewards)
    with pytest.raises(ValueError, match="unknown reward control 'shuffled'; use none, permuted"):
        controlled_rewards(rewards, "shuffled", 0, 0)  # type: ignore[arg-type]


def test_permuted_rewards_carry_no_signal():
    """Over many updates every member receives every position's reward about equally often, and
    the z-scores the update applies are uncorrelated with the member's own (true) z-scores."""
    n, steps = 4, 4000
    counts = np.zeros((n, n))
    rewards = np.array([0.0, 0.25, 0.5, 1.0])
    z_true = normalize_rewards(rewards)
    alignment = []
    for step in range(steps):
        perm = control_permutation(11, step, n)
        counts[np.arange(n), perm] += 1
        alignment.append(float(normalize_rewards(rewards[perm]) @ z_true) / n)
    np.testing.assert_allclose(counts / steps, 1 / n, atol=0.03)
    assert abs(np.mean(alignment)) < 0.03  # the true run's alignment would be 1
