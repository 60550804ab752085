"""An empirical null for ES: the update computed from rewards shuffled among the members.

With ``reward_control: permuted`` each update applies z = normalise(R_π(1), …, R_π(N)): the same
seeds, prompts, compute and z values, but z_i no longer belongs to ε_i, so the step carries no
signal. π is a pure function of (run seed, update), so a resumed run redraws it.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from es_lightning.es.noise import blake2b_u64

RewardControl = Literal["none", "permuted"]
REWARD_CONTROLS: tuple[str, ...] = ("none", "permuted")


def control_permutation(run_seed: int, step: int, n: int) -> np.ndarray:
    """π of update ``step``: a permutation of 0..n−1, a pure function of its arguments."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    keys = [blake2b_u64(run_seed, step, i, person=b"es-reward-perm") >> 1 for i in range(n)]
    return np.array(sorted(range(n), key=lambda i: (keys[i], i)), dtype=np.int64)


def controlled_rewards(rewards: np.ndarray, control: RewardControl, run_seed: int, step: int) -> np.ndarray:
    """The rewards the update normalises: ``rewards`` (``none``) or ``rewards[π]`` (``permuted``)."""
    r = np.asarray(rewards, dtype=np.float64)
    if control == "none":
        return r
    if control == "permuted":
        return r[control_permutation(run_seed, step, r.size)]
    raise ValueError(f"unknown reward control {control!r}; use {', '.join(REWARD_CONTROLS)}")
