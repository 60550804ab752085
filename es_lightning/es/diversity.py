"""How differently the members of one ES population succeed, and how much of it reaches the centre.

Coverage and diversity per prompt, with p_i(x) member i's success rate on prompt x and p̄(x) the
mean over N members::

    P_pop(x)  = 1 − Π_i (1 − p_i(x))          at least one member solves x
    P_same(x) = 1 − (1 − p̄(x))^N             the same, had every member the mean rate
    gap(x)    = P_pop(x) − P_same(x)  ≥ 0
    JS(x)     = h(p̄(x)) − (1/N) Σ_i h(p_i(x))  h: the binary entropy in bits

averaged over prompts; :func:`excess_diversity` subtracts what N σ = 0 copies show (sampling noise).

The transfer to the centre. Symbols: centre θ, members θ_i = θ + s_i·σ·ε_i, applied normalised rewards z_i, the update
θ⁺ = θ + (α/N)·Σ_i s_i z_i ε_i, and success rates measured on probe responses that did not produce
the rewards: p_i(x) of member i, p_θ(x) and p_θ⁺(x) of the centre before and after.

Alignment: cov(x) = (1/N) Σ_i (z_i − z̄)(p_i(x) − p̄(x)), reported as its mean over x; 0 in
expectation when the rewards carry no information about the members.

Transfer (Proposition 1 as this project states it). Linearising success in the weights, to first
order the updated centre succeeds like the reward-weighted mixture

    B_w(x) = w_0 p_θ(x) + Σ_i w_i p_i(x),   w_i = α z_i / (σ N),   w_0 = 1 − Σ_i w_i
           = p_θ(x) + (α/σ)·cov(x)        (z-scores and ranks: Σ_i z_i = 0)

(a signed mixture, clipped to [0, 1]). The transfer error is KL(B_w ‖ B_θ⁺)(x) in bits, both rates
clipped to [δ, 1 − δ] (δ = 1/(2(M+1)), Krichevsky–Trofimov), and by Pinsker the centre keeps at
least margin(x) = (B_w(x) − p_θ(x)) − sqrt(KL(x)·ln 2 / 2) of the mixture's gain. Logged:
``diversity/alignment_cov``, ``transfer_kl``, ``mixture_gain`` (mean B_w − p_θ), ``centre_gain``
(mean p_θ⁺ − p_θ) and ``transfer_margin``.
"""

from __future__ import annotations

import math

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


def alignment_covariance(z: np.ndarray, success: np.ndarray) -> float:
    """mean_x (1/N) Σ_i (z_i − z̄)(p_i(x) − p̄(x)) for ``success[i, x]`` = p_i(x), shape (N, P)."""
    p = check_rates(success)
    z = np.asarray(z, dtype=np.float64)
    if z.shape != (p.shape[0],) or not np.all(np.isfinite(z)):
        raise ValueError(f"z must be {p.shape[0]} finite numbers (one per member), got shape {z.shape}")
    return float(((z - z.mean())[:, None] * (p - p.mean(axis=0))).mean(axis=0).mean())


def mixture_weights(z: np.ndarray, learning_rate: float, sigma: float) -> np.ndarray:
    """w_i = α z_i / (σ N), the members' weights in the updated centre's success."""
    if not (learning_rate > 0 and sigma > 0):
        raise ValueError(f"mixture_weights: α and σ must be > 0, got {learning_rate}, {sigma}")
    z = np.asarray(z, dtype=np.float64)
    return (learning_rate / sigma) * z / z.size


def bernoulli_kl(a: np.ndarray, b: np.ndarray, clip: float = 0.0) -> np.ndarray:
    """KL(Bernoulli(a) ‖ Bernoulli(b)) in bits, elementwise, both clipped to [clip, 1 − clip]."""
    a = np.clip(np.asarray(a, dtype=np.float64), clip, 1.0 - clip)
    b = np.clip(np.asarray(b, dtype=np.float64), clip, 1.0 - clip)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(a > 0, a * np.log2(a / b), 0.0) + np.where(
            a < 1, (1 - a) * np.log2((1 - a) / (1 - b)), 0.0
        )
    # KL >= 0; rounding makes it a few 1e-17 below 0 where a and b differ in the last bit (0.3 and
    # 0.1 + 0.2), and the margin's sqrt of that would be NaN
    return np.maximum(terms, 0.0)


def transfer_error(
    weights: np.ndarray,
    members: np.ndarray,
    centre_before: np.ndarray,
    centre_after: np.ndarray,
    clip: float,
) -> dict[str, float]:
    """KL(B_w ‖ B_θ⁺), the gains and the margin (module docstring) averaged over prompts, for the
    members' ``weights`` (N,), success ``members`` (N, P), the centre's before and after (P,) and
    the KL's ``clip`` δ."""
    p = check_rates(members, "members")
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (p.shape[0],):
        raise ValueError(f"weights must have shape ({p.shape[0]},), got {w.shape}")
    before = check_rates(np.asarray(centre_before)[None, :], "centre_before")[0]
    after = check_rates(np.asarray(centre_after)[None, :], "centre_after")[0]
    if before.shape != (p.shape[1],) or after.shape != (p.shape[1],):
        raise ValueError(f"centre rates must have shape ({p.shape[1]},)")
    mixture = np.clip((1.0 - w.sum()) * before + w @ p, 0.0, 1.0)  # (P,) B_w(x)
    kl = bernoulli_kl(mixture, after, clip)
    margin = (mixture - before) - np.sqrt(kl * math.log(2) / 2)
    return {
        "diversity/transfer_kl": float(kl.mean()),
        "diversity/mixture_gain": float((mixture - before).mean()),
        "diversity/centre_gain": float((after - before).mean()),
        "diversity/transfer_margin": float(margin.mean()),
    }
