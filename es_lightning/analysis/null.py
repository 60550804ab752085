"""The random-walk null of ES drift: D_rel, s_τ and the top-k by kind had the rewards told nothing.

One applied ES update (:mod:`es_lightning.es.update`, plain SGD) moves coordinate j by

    Δ_j = (α/N) · Σ_s c_s ε_s,j        ε_s,j ~ N(0, 1) i.i.d. (fresh directions every update)

with c_s the per-seed coefficients (one-point: c_i = z_i). Whatever the rewards were, given the
coefficients Δ_j ~ N(0, (α/N)² Σ_s c_s²). With z-scores (population std, ddof 0,
:func:`~es_lightning.es.normalize.normalize_rewards`) Σ_i z_i² = N exactly on every applied update,
so each adds variance α²/N per coordinate, and after T_applied updates (the run's T minus the
updates skipped because every reward tied, ``es/skipped``) every coordinate is

    Δθ_j ~ N(0, v),   v = T_applied · α²/N · c

independently of every other coordinate, with c = Σ_s c_s² / N per update:

==============  ===========  ==========================================================================
normalization   estimator    c
==============  ===========  ==========================================================================
``zscore``      one_point    1 (exact: Σ z_i² = N)
``zscore``      antithetic   data-dependent: c_j = z_2j − z_2j+1, Σ_j c_j² = N − 2 Σ_j z_2j z_2j+1. Its
                             mean is N²/(N−1) when the N rewards are exchangeable (E z_a z_b = −1/(N−1)),
                             but the two members of a pair share prompts and (common seeds) samples,
                             so their rewards correlate and the steps are shorter: c = N/(N−1) is used
                             only when the run logged no step norms
``rank``        either       not in closed form: tied rewards (the rule with 0/1 rewards) shrink Σ z²
``none``        either       not in closed form: z = R, Σ R² is the rewards' scale
==============  ===========  ==========================================================================

Except for z-scored one-point runs, v is taken from the run's logged step norms where it has them:
v = Σ_t ‖Δ_t‖² / P (``es/update_norm``; the walk's prediction given how long each step was). The
``adam`` optimizer rescales each coordinate and is not modelled. Under the null, with P coordinates (of kind k: P_k)
and the starting weights' norm ‖θ_0‖ (per kind ‖θ_0,k‖):

    D_rel = sqrt(P·v) / ‖θ_0‖,   D_rel,k = sqrt(P_k·v) / ‖θ_0,k‖
    s_τ   = P(|Δθ_j| ≤ τ) = erf(τ / sqrt(2v))        (every coordinate moves: P(Δθ_j = 0) = 0)
    E[top-k count of kind k] = k · P_k / P         (i.i.d. coordinates: the top k are a uniform draw)

and the enrichment of kind k in the top k is observed/expected, with a Wilson 95% interval on the
observed share. This is the stored (fp32) view; the bf16 view (both sides rounded to bfloat16
first) depends on where θ_0 lies on the bf16 grid and is not modelled.
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
    """v, the per-coordinate variance after every walk in ``walks`` (stages add), and its source.

    Per walk: the closed form T_applied·α²/N for z-scored one-point ES (exact); else Σ ‖Δ_t‖² / P
    from the logged step norms; else c = N/(N−1) for z-scored antithetic ES (the mean under
    exchangeable rewards); else unknown, and v is ``None`` with the reason.
    """
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
    """Per kind: observed top-k count, expected k·P_k/P, their ratio and its Wilson 95% interval.

    ``ratio`` and ``ratio_ci`` are ``None`` for a kind with no coordinates (expected 0).
    """
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
    """The null's value of every statistic of an analysed view (:mod:`~es_lightning.analysis.pair`).

    ``view`` needs ``numel``, ``base_l2``, ``numel_by_kind``, ``base_l2_by_kind``, ``top_k`` and
    ``top_k_by_kind``; the result has ``rel_l2``, ``rel_l2_by_kind``, ``sparsity`` (keyed like the
    view's), ``top_k_by_kind`` (expected counts) and ``top_k_enrichment``.
    """
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
    """The ``null`` block written beside an analysed view's statistics.

    ``{"modelled": true, "variance", "variance_source", "rel_l2", "rel_l2_by_kind", "sparsity",
    "top_k_by_kind", "top_k_enrichment", "measured_over_null", ["rel_l2_from_update_norms"],
    "inputs"}``, or ``{"modelled": false, "reason", "inputs"}`` when v is unknown.
    ``rel_l2_from_update_norms`` = sqrt(Σ_t ‖Δ_t‖²) / ‖θ_0‖ is the walk's D_rel given the logged
    step lengths (no α, N or c involved).
    """
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
