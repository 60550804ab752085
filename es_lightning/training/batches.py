"""Which prompts an update sees: a pure function of (seed, step), so resuming replays the order;
each epoch a fresh permutation, a batch possibly straddling two epochs."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np


def epoch_order(num_rows: int, seed: int, epoch: int) -> np.ndarray:
    """The permutation of row indices for ``epoch``."""
    return np.random.default_rng([seed, epoch]).permutation(num_rows)


def batch_indices(num_rows: int, batch_size: int, seed: int, step: int) -> list[int]:
    """Row indices of update ``step``."""
    if num_rows < 1:
        raise ValueError("batch_indices: there are no training rows")
    out: list[int] = []
    position = step * batch_size
    while len(out) < batch_size:
        epoch, offset = divmod(position, num_rows)
        order = epoch_order(num_rows, seed, epoch)
        take = min(batch_size - len(out), num_rows - offset)
        out.extend(int(i) for i in order[offset : offset + take])
        position += take
    return out


def batch_rows(rows: list[dict[str, Any]], batch_size: int, seed: int, step: int) -> list[dict[str, Any]]:
    return [rows[i] for i in batch_indices(len(rows), batch_size, seed, step)]


def steps_for_epochs(num_rows: int, batch_size: int, epochs: float) -> int:
    """Updates needed to see the rows ``epochs`` times."""
    # Exact decimal arithmetic: with floats, 1.1 * 100 / 2 = 55.00000000000001 would give 56 updates.
    return max(1, math.ceil(Fraction(repr(float(epochs))) * num_rows / batch_size))
