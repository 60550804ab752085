"""How differently the members of one ES population succeed: coverage and diversity per prompt.

For prompt x, member i's success rate p_i(x) is the fraction of its M responses to x that the
verifier accepts; p̄(x) is the mean over the N members. Per prompt:

    P_pop(x)  = 1 − Π_i (1 − p_i(x))          at least one member solves x (one draw each)
    P_same(x) = 1 − (1 − p̄(x))^N             the same, had every member the mean rate p̄(x)
    gap(x)    = P_pop(x) − P_same(x)  ≥ 0     (AM–GM: Π_i (1 − p_i) ≤ (1 − p̄)^N)
    JS(x)     = h(p̄(x)) − (1/N) Σ_i h(p_i(x))  h(p) = −p log₂ p − (1 − p) log₂(1 − p)

JS is the Jensen–Shannon divergence (in bits, so in [0, 1]) of the members' Bernoulli success
distributions from their mixture: the verifier-projected diversity of the population. Each metric
is averaged over the prompts.

Estimated from M samples, the rates p̂_i(x) differ between members that are identical: sampling
noise alone gives JS > 0 and gap > 0 (with M = 1, p̂_i ∈ {0, 1}, identical members at p = 1/2 show
about 0.6 bits after averaging). :func:`excess_diversity` therefore subtracts the same statistics
of a σ = 0 baseline: N copies of the centre sampled with the members' own sampling seeds. Members
that are in fact identical give exactly the copies' rates, so excess JS and excess gap are 0 under
common and independent sampling seeds alike:

    js_excess  = JS(members) − JS(copies)
    gap_excess = gap(members) − gap(copies)
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
    """``success`` as float64 of shape (N ≥ 1, P ≥ 1) with every rate in [0, 1].

    Raises:
        ValueError: another shape or a rate outside [0, 1], naming ``name``.
    """
    p = np.asarray(success, dtype=np.float64)
    if p.ndim != 2 or p.shape[0] < 1 or p.shape[1] < 1:
        raise ValueError(f"{name} must have shape (members, prompts), got {p.shape}")
    if np.any(p < 0) or np.any(p > 1):
        raise ValueError(f"{name}: success rates must lie in [0, 1]")
    return p


def population_diversity(success: np.ndarray) -> dict[str, float]:
    """``diversity/{p_pop, p_same, gap, js}`` of ``success[i, x]`` = p_i(x), shape (N, P),
    each averaged over the P prompts.

    Raises:
        ValueError: on a shape other than (N ≥ 1, P ≥ 1) or rates outside [0, 1].
    """
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
    """The members' diversity, the σ = 0 copies' and the excess (module docstring).

    Returns ``diversity/{p_pop, p_same, gap, js}`` of ``members``, ``diversity/{js, gap}_baseline``
    of ``copies`` and ``diversity/{js, gap}_excess``.

    Raises:
        ValueError: either table malformed, or their shapes differ.
    """
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
