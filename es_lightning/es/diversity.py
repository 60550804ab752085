"""How differently the members of one ES population succeed: coverage and diversity per prompt.

For prompt x, member i's success rate p_i(x) is the fraction of its responses to x that the
verifier accepts (one response per prompt in the paper's setting, so p_i(x) ∈ {0, 1}); p̄(x) is the
mean over the N members. Per prompt:

    P_pop(x)  = 1 − Π_i (1 − p_i(x))          at least one member solves x (one draw each)
    P_same(x) = 1 − (1 − p̄(x))^N             the same, had every member the mean rate p̄(x)
    gap(x)    = P_pop(x) − P_same(x)  ≥ 0     (AM–GM: Π_i (1 − p_i) ≤ (1 − p̄)^N)
    JS(x)     = h(p̄(x)) − (1/N) Σ_i h(p_i(x))  h(p) = −p log₂ p − (1 − p) log₂(1 − p)

JS is the Jensen–Shannon divergence (in bits, so in [0, 1]) of the members' Bernoulli success
distributions from their mixture: the verifier-projected diversity of the population. The
alignment condition of the paper is measured by the covariance, over members, between the
normalised rewards z_i that weight the update and the success rates:

    cov(x) = (1/N) Σ_i (z_i − z̄)(p_i(x) − p̄(x))

Each metric is averaged over the update's prompts. Identical members give JS = 0 and
P_pop = P_same; members that solve complementary prompts give P_pop > P_same.
"""

from __future__ import annotations

import numpy as np


def binary_entropy(p: np.ndarray) -> np.ndarray:
    """h(p) in bits, elementwise, with h(0) = h(1) = 0."""
    p = np.clip(np.asarray(p, dtype=np.float64), 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = -(p * np.log2(p)) - (1.0 - p) * np.log2(1.0 - p)
    return np.nan_to_num(terms, nan=0.0)


def population_diversity(success: np.ndarray, z: np.ndarray | None = None) -> dict[str, float]:
    """The metrics above from ``success[i, x]`` = p_i(x), shape (N, P), and the N z-scores.

    Returns ``diversity/{p_pop, p_same, gap, js}`` and, with ``z``, ``diversity/weight_success_cov``,
    each averaged over the P prompts.

    Raises:
        ValueError: on a shape other than (N ≥ 1, P ≥ 1), rates outside [0, 1], or ``z`` not (N,).
    """
    p = np.asarray(success, dtype=np.float64)
    if p.ndim != 2 or p.shape[0] < 1 or p.shape[1] < 1:
        raise ValueError(f"population_diversity: success must have shape (members, prompts), got {p.shape}")
    if np.any(p < 0) or np.any(p > 1):
        raise ValueError("population_diversity: success rates must lie in [0, 1]")
    n = p.shape[0]
    mean = p.mean(axis=0)  # (P,) p̄(x)
    p_pop = 1.0 - np.prod(1.0 - p, axis=0)
    p_same = 1.0 - (1.0 - mean) ** n
    js = binary_entropy(mean) - binary_entropy(p).mean(axis=0)
    out = {
        "diversity/p_pop": float(p_pop.mean()),
        "diversity/p_same": float(p_same.mean()),
        "diversity/gap": float((p_pop - p_same).mean()),
        "diversity/js": float(js.mean()),
    }
    if z is not None:
        z = np.asarray(z, dtype=np.float64)
        if z.shape != (n,):
            raise ValueError(f"population_diversity: z must have shape ({n},), got {z.shape}")
        cov = ((z - z.mean())[:, None] * (p - mean[None, :])).mean(axis=0)  # (P,)
        out["diversity/weight_success_cov"] = float(cov.mean())
    return out
