"""An empirical null for ES: the update computed from rewards shuffled among the members.

With ``reward_control: permuted`` every update applies z = normalise(R_π(1), …, R_π(N)), π a fresh
permutation per update. Seeds, prompts, compute, step size and the set of z values are the real
run's, but z_i no longer belongs to ε_i, so the step carries no signal: a metric that improves as
much under this control as under the real run is not evidence that ES climbed anything.

π is a pure function of (run seed, update t) (members sorted by a BLAKE2b key of (run_seed, t, i)),
so a resumed run redraws the same permutations.
"""

from __future__ import annotations

import hashlib
from typing import Literal

import numpy as np

__all__ = ["REWARD_CONTROLS", "RewardControl", "control_permutation", "controlled_rewards"]

RewardControl = Literal["none", "permuted"]
REWARD_CONTROLS: tuple[str, ...] = ("none", "permuted")


def _key(run_seed: int, step: int, member: int) -> int:
    h = hashlib.blake2b(digest_size=8, person=b"es-reward-perm")
    for part in (run_seed, step, member):
        data = str(int(part)).encode("ascii")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return int.from_bytes(h.digest(), "little") >> 1


def control_permutation(run_seed: int, step: int, n: int) -> np.ndarray:
    """π of update ``step``: a permutation of 0..n−1, a pure function of its arguments."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    keys = [_key(run_seed, step, i) for i in range(n)]
    return np.array(sorted(range(n), key=lambda i: (keys[i], i)), dtype=np.int64)


def controlled_rewards(rewards: np.ndarray, control: RewardControl, run_seed: int, step: int) -> np.ndarray:
    """The rewards the update normalises: ``rewards`` itself for ``none``, ``rewards[π]`` for
    ``permuted`` (member i gets R_π(i))."""
    r = np.asarray(rewards, dtype=np.float64)
    if control == "none":
        return r
    if control == "permuted":
        return r[control_permutation(run_seed, step, r.size)]
    raise ValueError(f"unknown reward control {control!r}; use {', '.join(REWARD_CONTROLS)}")
