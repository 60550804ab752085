"""How differently the members of one ES population succeed: coverage and diversity per prompt.

With p_i(x) member i's success rate on prompt x and p̄(x) the mean over N members::

    P_pop(x)  = 1 − Π_i (1 − p_i(x))          at least one member solves x
    P_same(x) = 1 − (1 − p̄(x))^N             the same, had every member the mean rate
    gap(x)    = P_pop(x) − P_same(x)  ≥ 0
    JS(x)     = h(p̄(x)) − (1/N) Σ_i h(p_i(x))  h: the binary entropy in bits

averaged over prompts; :func:`excess_diversity` subtracts what N σ = 0 copies show (sampling noise).
"""

from __future__ import annotations

import numpy as np


def binary_entropy(p: np.ndarray) -> np.ndarray:
    """h(p) in bits, elementwise, with h(0) = h(1) = 0."""
    p = np.clip(np.asarray(p, dtype=np.float64), 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = -(p * np.log2(p)) - (1.0 - p) * np.log2(1.0 - p)
    return np.nan_to_num(terms, nan=0.0)


def check_rates(success: np.ndarray, name: str = "success") -> np.ndarray:
    """``success`` as float64 (N ≥ 1, P ≥ 1) with rates in [0, 1]; ValueError naming ``name``."""
    p = np.asarray(success, dtype=np.float64)
    if p.ndim != 2 or p.shape[0] < 1 or p.shape[1] < 1:
        raise ValueError(f"{name} must have shape (members, prompts), got {p.shape}")
    if np.any(p < 0) or np.any(p > 1):
        raise ValueError(f"{name}: success rates must lie in [0, 1]")
    return p


def population_diversity(success: np.ndarray) -> dict[str, float]:
    """``diversity/{p_pop, p_same, gap, js}`` of ``success`` (N, P), averaged over prompts."""
    p = check_rates(success)
    n = p.shape[0]
    mean = p.mean(axis=0)  # (P,) p̄(x)
    p_pop = 1.0 - np.prod(1.0 - p, axis=0)
    p_same = 1.0 - (1.0 - mean) ** n
    js = binary_entropy(mean) - binary_entropy(p).mean(axis=0)
    return {
        "diversity/p_pop": float(p_pop.mean()),
        "diversity/p_same": float(p_same.mean()),
        "diversity/gap": float((p_pop - p_same).mean()),
        "diversity/js": float(js.mean()),
    }


def excess_diversity(members: np.ndarray, copies: np.ndarray) -> dict[str, float]:
    """The members' diversity, the σ = 0 ``copies``' (``_baseline``) and the ``_excess``."""
    members, copies = check_rates(members, "members"), check_rates(copies, "copies")
    if members.shape != copies.shape:
        raise ValueError(f"members {members.shape} and copies {copies.shape} must have the same shape")
    own, base = population_diversity(members), population_diversity(copies)
    return {
        **own,
        "diversity/js_baseline": base["diversity/js"],
        "diversity/gap_baseline": base["diversity/gap"],
        "diversity/js_excess": own["diversity/js"] - base["diversity/js"],
        "diversity/gap_excess": own["diversity/gap"] - base["diversity/gap"],
    }
