"""Population reward normalisation: rewards R_1..R_N → coefficients z_1..z_N.

``zscore`` (default): (R_i − mean R) / std R (ddof 0); ``rank``: centred ranks as in OpenAI-ES,
rank_i / (N − 1) − 0.5 (ties averaged); ``none``: R_i. Equal rewards give zeros (the update is then
skipped, :func:`is_degenerate`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

Normalization = Literal["zscore", "rank", "none"]
NORMALIZATIONS: tuple[str, ...] = ("zscore", "rank", "none")


def _as_rewards(rewards: Sequence[float] | np.ndarray) -> np.ndarray:
    r = np.asarray(rewards, dtype=np.float64)
    if r.ndim != 1:
        raise ValueError(f"rewards must be one-dimensional, got shape {r.shape}")
    if not np.all(np.isfinite(r)):
        raise ValueError(f"rewards must be finite, got {r.tolist()}")
    return r


def is_degenerate(rewards: Sequence[float] | np.ndarray) -> bool:
    """True when every reward is equal (or there are fewer than two): no update direction."""
    r = _as_rewards(rewards)
    return r.size < 2 or bool(np.all(r == r[0]))


def _average_ranks(r: np.ndarray) -> np.ndarray:
    """0-based ranks; tied values share the mean of the ranks they occupy."""
    _, inverse, counts = np.unique(r, return_inverse=True, return_counts=True)
    first = np.cumsum(counts) - counts  # rank of the first element of each tie group
    return (first + (counts - 1) / 2.0)[inverse.reshape(-1)]


def normalize_rewards(rewards: Sequence[float] | np.ndarray, method: Normalization = "zscore") -> np.ndarray:
    """Normalise one population's rewards; returns float64 of the same length."""
    if method not in NORMALIZATIONS:
        raise ValueError(f"unknown reward normalization {method!r}; expected one of {NORMALIZATIONS}")
    r = _as_rewards(rewards)
    if method == "none":
        return r.copy()
    if is_degenerate(r):
        return np.zeros_like(r)
    if method == "zscore":
        return (r - r.mean()) / r.std()
    # rank
    return _average_ranks(r) / (r.size - 1) - 0.5
