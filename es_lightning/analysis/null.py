"""The random-walk null of ES drift: D_rel, s_τ and the top-k by kind had the rewards told nothing.

One applied ES update moves coordinate j by Δ_j = (α/N) · Σ_s c_s ε_s,j with fresh ε ~ N(0, 1),
so whatever the rewards, Δ_j ~ N(0, (α/N)² Σ_s c_s²). After T_applied updates every coordinate is
independently

    Δθ_j ~ N(0, v),   v = T_applied · α²/N · c,     c = Σ_s c_s² / N per update

c = 1 exactly for z-scored one-point ES (Σ z_i² = N). Otherwise v is taken from the logged step
norms, v = Σ_t ‖Δ_t‖² / P (``es/update_norm``), or, for z-scored antithetic ES without them,
c = N/(N−1) (the mean under exchangeable rewards); rank and ``none`` normalisation and ``adam`` have
no closed form. With P coordinates (P_k of kind k):

    D_rel = sqrt(P·v) / ‖θ_0‖,   D_rel,k = sqrt(P_k·v) / ‖θ_0,k‖
    s_τ   = erf(τ / sqrt(2v))
    E[top-k count of kind k] = k · P_k / P

with a Wilson 95 % interval on the observed share. The bf16 view is not modelled.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from es_lightning.analysis.delta import tau_key
from es_lightning.analysis.kinds import KINDS
from es_lightning.errors import ConfigError

WILSON_Z = 1.959963984540054
"""The normal quantile of a two-sided 95% interval."""


@dataclass(frozen=True)
class RandomWalk:
    """The ES settings a random-walk null needs (one run or one pipeline stage)."""

    learning_rate: float
    """α, the step size."""
    population_size: int
    """N, members per update."""
    applied_updates: int
    """T_applied: updates made minus those skipped (all rewards tied)."""
    normalization: str = "zscore"
    """How rewards were normalised: ``zscore``, ``rank`` or ``none``."""
    estimator: str = "one_point"
    """``one_point`` or ``antithetic``."""
    optimizer: str = "sgd"
    """``sgd`` (plain ES) or ``adam`` (not modelled)."""
    update_sq_norm_sum: float | None = None
    """Σ_t ‖Δ_t‖² over the applied updates, from ``es/update_norm`` when the run logged it."""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.learning_rate) and self.learning_rate > 0):
            raise ConfigError(f"random walk: learning_rate α must be > 0, got {self.learning_rate}")
        if self.population_size < 2:
            raise ConfigError(f"random walk: population_size N must be >= 2, got {self.population_size}")
        if self.applied_updates < 0:
            raise ConfigError(f"random walk: applied_updates must be >= 0, got {self.applied_updates}")
        for name, value, allowed in (
            ("normalization", self.normalization, ("zscore", "rank", "none")),
            ("estimator", self.estimator, ("one_point", "antithetic")),
            ("optimizer", self.optimizer, ("sgd", "adam")),
        ):
            if value not in allowed:
                raise ConfigError(f"random walk: unknown {name} {value!r}; use {', '.join(allowed)}")


def coefficient_scale(normalization: str, estimator: str, population_size: int) -> float | None:
    """c = E[Σ_s c_s²] / N of one applied update (module table); ``None`` where not in closed form."""
    if normalization != "zscore":
        return None
    n = population_size
    return 1.0 if estimator == "one_point" else n / (n - 1)


def walk_variance(walks: Sequence[RandomWalk], numel: int) -> tuple[float | None, str]:
    """v after every walk in ``walks`` (stages add) and its source; ``None`` with the reason."""
    if any(w.optimizer != "sgd" for w in walks):
        return None, "not modelled: the adam optimizer rescales every coordinate"
    total, sources = 0.0, []
    for w in walks:
        c = coefficient_scale(w.normalization, w.estimator, w.population_size)
        if c is not None and w.estimator == "one_point":
            total += w.applied_updates * w.learning_rate**2 / w.population_size * c
            sources.append("closed form T_applied·α²/N")
        elif w.update_sq_norm_sum is not None and numel > 0:
            total += w.update_sq_norm_sum / numel
            sources.append("logged step norms Σ‖Δ_t‖²/P")
        elif c is not None:
            total += w.applied_updates * w.learning_rate**2 / w.population_size * c
            sources.append("closed form T_applied·α²/N·N/(N−1), exchangeable rewards assumed")
        else:
            return None, (
                f"not modelled: {w.normalization} normalisation has no closed form and the run logged "
                "no es/update_norm"
            )
    return total, "; ".join(dict.fromkeys(sources))


def null_rel_l2(variance: float, numel: int, base_l2: float) -> float | None:
    """sqrt(P·v) / ‖θ_0‖ (``None`` when ‖θ_0‖ = 0)."""
    return math.sqrt(numel * variance) / base_l2 if base_l2 > 0 else None


def null_sparsity(variance: float, tau: float) -> float:
    """s_τ = P(|Δθ| ≤ τ) = erf(τ / sqrt(2v)) for Δθ ~ N(0, v); 1 when v = 0."""
    return math.erf(tau / math.sqrt(2.0 * variance)) if variance > 0 else 1.0


def wilson_interval(successes: int, trials: int, z: float = WILSON_Z) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion successes/trials (default 95%)."""
    if trials <= 0:
        return 0.0, 1.0
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return max(0.0, centre - half), min(1.0, centre + half)


def top_k_enrichment(
    counts: Mapping[str, int], numel_by_kind: Mapping[str, int], k: int
) -> dict[str, dict[str, Any]]:
    """Per kind: observed and expected top-k counts, their ratio and its Wilson 95 % interval."""
    total = sum(numel_by_kind.values())
    out = {}
    for kind in [kd for kd in KINDS if kd in numel_by_kind]:
        share = numel_by_kind[kind] / total if total else 0.0
        observed = int(counts.get(kind, 0))
        low, high = wilson_interval(observed, k)
        out[kind] = {
            "observed": observed,
            "expected": k * share,
            "share": share,
            "ratio": observed / (k * share) if share and k else None,
            "ratio_ci": [low / share, high / share] if share and k else None,
        }
    return out


def null_statistics(view: Mapping[str, Any], variance: float, taus: Sequence[float]) -> dict[str, Any]:
    """The null's value of each statistic of an analysed ``view``."""
    numel_by_kind = view["numel_by_kind"]
    k = len(view["top_k"])
    enrichment = top_k_enrichment(view["top_k_by_kind"], numel_by_kind, k)
    return {
        "variance": variance,
        "rel_l2": null_rel_l2(variance, view["numel"], view["base_l2"]),
        "rel_l2_by_kind": {
            kind: null_rel_l2(variance, n, view["base_l2_by_kind"][kind]) for kind, n in numel_by_kind.items()
        },
        "sparsity": {tau_key(t): null_sparsity(variance, t) for t in taus},
        "top_k_by_kind": {kind: e["expected"] for kind, e in enrichment.items()},
        "top_k_enrichment": enrichment,
    }


def null_block(
    view: Mapping[str, Any],
    walks: Sequence[RandomWalk],
    taus: Sequence[float],
    inputs: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``null`` block beside a view's statistics (``modelled: false`` and why, when v is unknown)."""
    extra = {"inputs": dict(inputs)} if inputs is not None else {}
    variance, source = walk_variance(walks, view["numel"])
    if variance is None:
        return {"modelled": False, "reason": source, **extra}
    stats = null_statistics(view, variance, taus)
    ratios: dict[str, Any] = {
        "rel_l2": _over(view["rel_l2"], stats["rel_l2"]),
        "rel_l2_by_kind": {
            k: _over(view["rel_l2_by_kind"].get(k), v) for k, v in stats["rel_l2_by_kind"].items()
        },
        "sparsity": {k: _over(view["sparsity"].get(k), v) for k, v in stats["sparsity"].items()},
    }
    block = {"modelled": True, "variance_source": source, **stats, "measured_over_null": ratios}
    if walks and all(w.update_sq_norm_sum is not None for w in walks) and view["base_l2"] > 0:
        steps_sq = sum(w.update_sq_norm_sum for w in walks)  # type: ignore[misc]
        block["rel_l2_from_update_norms"] = math.sqrt(steps_sq) / view["base_l2"]
    return {**block, **extra}


def _over(measured: float | None, null: float | None) -> float | None:
    return measured / null if measured is not None and null else None
