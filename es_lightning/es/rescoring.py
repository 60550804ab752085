"""Member rewards on fixed rollouts: one set of responses, re-scored under every member's weights.

With ``member_rollouts: fixed`` the centre samples K responses once per update and member i's
reward is their self-normalised importance-weighted reward under θ + σε_i (ℓ at temperature 1)::

    w_i(y) = exp(ℓ_{θ+σε_i}(y) − ℓ_θ(y)),   R_i = (1/K) Σ_y w_i(y) · K / Σ_y' w_i(y') · r(y)
"""

from __future__ import annotations

import numpy as np


def importance_weights(member_logps: np.ndarray, centre_logps: np.ndarray) -> np.ndarray:
    """w̃_i(y) for K responses from their sequence log-likelihoods (shape (K,)); mean 1."""
    member_logps = np.asarray(member_logps, dtype=np.float64)
    centre_logps = np.asarray(centre_logps, dtype=np.float64)
    if member_logps.shape != centre_logps.shape or member_logps.ndim != 1 or member_logps.size == 0:
        raise ValueError(
            f"importance_weights: need two equal 1-D arrays, got {member_logps.shape} and {centre_logps.shape}"
        )
    log_w = member_logps - centre_logps
    w = np.exp(log_w - log_w.max())
    return w * (w.size / w.sum())


def rescored_rewards(
    weights: np.ndarray, values: np.ndarray, prompt_of: np.ndarray, n_prompts: int
) -> tuple[float, np.ndarray]:
    """(R_i, per-prompt means of w̃·value) for responses of prompts ``prompt_of`` (shape (K,))."""
    weighted = np.asarray(weights, dtype=np.float64) * np.asarray(values, dtype=np.float64)
    per_prompt = np.bincount(prompt_of, weights=weighted, minlength=n_prompts)
    counts = np.bincount(prompt_of, minlength=n_prompts)
    return float(weighted.mean()), per_prompt / np.maximum(counts, 1)
