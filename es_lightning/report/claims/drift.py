"""Drift claims: how far ES moves, how sparse its update looks, where its largest updates are.

Each is a number per run (``es-lightning analyze`` on the final checkpoint), so its interval is
the t interval over seeds (one seed: not resolved). All but GRPO's attribution are ES-relative
and judged only when ES learned: a random walk of ES's α, N and T drifts as far, and its s_τ
equals the closed-form null's (shown beside each number when ``analyze`` wrote it). The
attribution claims ask whether the claimed layer kinds hold more of the top-k largest updates
than their share of the parameters (what i.i.d. updates would give): the pooled observed share
over seeds, with a one-sided Wilson bound at the report's level, against that share.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

from es_lightning.report.claims.common import Context, claim, fmt_interval, interval_json, points
from es_lightning.report.intervals import seed_interval
from es_lightning.report.stats import fmt_number, fmt_stat, paired_difference, stat_json
from es_lightning.report.verdicts import (
    NOT_REPRODUCED,
    ONE_SEED,
    REPRODUCED,
    UNRESOLVED,
    direction,
    gated,
    insufficient,
    non_inferior,
    within_range,
)

NO_ANALYSIS = insufficient("no es-lightning analyze output")


def wilson_bounds(successes: float, trials: float, level: float) -> tuple[float, float]:
    """One-sided Wilson score bounds at ``level`` of the proportion ``successes / trials``."""
    z = NormalDist().inv_cdf(level)
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / (1 + z * z / trials)
    return max(0.0, centre - half), min(1.0, centre + half)


def _seeded(ctx: Context, data: dict | None, verdict_of: Any) -> str:
    if not data:
        return NO_ANALYSIS
    interval = interval_json(seed_interval(data, ctx.level))
    return ONE_SEED if interval is None else verdict_of(interval)


def _null(method: dict[str, Any], *path: str) -> float | None:
    node: Any = method.get("null") or {}
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    return node.get("mean") if isinstance(node, dict) else None


def drift_claims(ctx: Context) -> list[dict[str, Any]]:
    drift = ctx.report.get("drift") or {"methods": {}}
    methods, out = drift.get("methods") or {}, []
    es = methods.get("es") or {}
    ratio = (drift.get("ratio") or {}).get("value")
    interval = interval_json(seed_interval(ratio, ctx.level))
    null = _null(es, "rel_l2")
    text = (
        f"rel-L2 es/grpo = {fmt_interval(interval, sign=False)}×"
        if interval
        else f"rel-L2 es/grpo = {fmt_stat(ratio)}"
    )
    if es.get("rel_l2"):
        text += f"; ES rel-L2 {fmt_stat(es['rel_l2'], spec='.3g')}"
        text += (
            f" (random-walk null {fmt_number(null, spec='.3g')})"
            if null is not None
            else " (no random-walk null)"
        )
    rule = f"premise, then one-sided {ctx.level_pct} t bound over seeds > 1"
    result = _seeded(ctx, ratio, lambda i: direction(i, "greater", 1.0))
    out.append(
        claim(
            "ES drifts further than GRPO (rel-L2)",
            "≈ 40×",
            text,
            gated(ctx.premise, result),
            rule,
            ratio=interval,
        )
    )

    s_tau = (es.get("sparsity") or {}).get("0.0015")
    interval = interval_json(seed_interval(s_tau, ctx.level))
    null = _null(es, "sparsity", "0.0015")
    text = (
        f"ES s_τ(1.5e-3) = {fmt_interval(interval, 100, sign=False) if interval else fmt_stat(s_tau, 100)}%"
    )
    text += f" (random-walk null {fmt_number(null, 100)}%)" if null is not None else ""
    rule = f"premise, then the whole {ctx.level_pct} t interval inside 78–93%"
    result = _seeded(ctx, s_tau, lambda i: within_range(i, 0.78, 0.93))
    out.append(
        claim(
            "Most ES updates are tiny",
            "s_τ at τ = 1.5e-3 ≈ 78–93%",
            text,
            gated(ctx.premise, result),
            rule,
            s_tau=interval,
        )
    )

    for method, kinds, paper, gate in (
        ("es", ("norm", "attention"), "norm / attention", ctx.premise),
        ("grpo", ("embedding", "lm_head"), "embedding / lm_head", None),
    ):
        out.append(_attribution(ctx, drift, method, kinds, paper, gate))
    out.append(_functional(ctx, es))
    return out


def _attribution(
    ctx: Context, drift: dict, method: str, kinds: tuple[str, ...], paper: str, gate: str | None
) -> dict:
    """The claimed kinds' share of the top-k (pooled over seeds) against their parameter share."""
    name = f"{method.upper()}'s largest updates are in {paper}"
    rule = f"one-sided {ctx.level_pct} Wilson bound of their top-k share > their parameter share"
    counts = (drift.get("methods", {}).get(method) or {}).get("top_k_by_kind") or {}
    shares = drift.get("kind_share") or {}
    total = sum(sum(s["values"]) for s in counts.values() if s)
    hits = sum(sum(counts[k]["values"]) for k in kinds if counts.get(k))
    if not counts or not total:
        return claim(name, paper, "–", gated(gate, NO_ANALYSIS), rule)
    observed = hits / total
    if not shares:
        text = f"top-k share of {'/'.join(kinds)} = {100 * observed:.1f}% (no parameter shares)"
        verdict = insufficient("no parameter shares by kind (analyze's null block)")
        return claim(name, paper, text, gated(gate, verdict), rule, observed=observed)
    expected = sum(shares.get(k, 0.0) for k in kinds)
    low, high = wilson_bounds(hits, total, ctx.level)
    text = f"top-k share of {'/'.join(kinds)} = {100 * observed:.1f}% [{100 * low:.1f}, {100 * high:.1f}] vs parameter share {100 * expected:.1f}%"
    verdict = REPRODUCED if low > expected else NOT_REPRODUCED if high <= expected else UNRESOLVED
    return claim(
        name,
        paper,
        text,
        gated(gate, verdict),
        rule,
        observed=observed,
        low=low,
        high=high,
        expected=expected,
    )


def _functional(ctx: Context, es: dict[str, Any]) -> dict[str, Any]:
    """Zeroing the updates with |Δ| ≤ τ (the largest τ evaluated) keeps ES's gain: the pruned
    model above the base scored on the same engine and seed, and not more than ``pass_margin``
    below the unpruned one (a pruned model that lost the gain is not within a margin of it)."""
    name = "ES's update is functionally sparse (zeroing updates below τ keeps Pass@1)"
    margin = ctx.settings.pass_margin
    rule = (
        f"premise, then over seeds (one-sided {ctx.level_pct} t bounds): pruned − base > 0 "
        f"and pruned − unpruned > −{points(margin)}"
    )
    paper = "pruned updates keep performance"
    curve = es.get("sparsity_curve") or {}
    taus = sorted((t for t in curve if float(t) > 0 and (curve[t].get("pass@1"))), key=float)
    full = (curve.get("0") or {}).get("pass@1")
    base = (es.get("sparsity_curve_base") or {}).get("pass@1")
    if not taus or not full:
        verdict = insufficient("no evaluated thresholded exports")
        return claim(name, paper, "–", gated(ctx.premise, verdict), rule)
    tau = taus[-1]
    pruned = curve[tau]["pass@1"]
    d = stat_json(paired_difference(_by_seed(pruned), _by_seed(full)))
    interval = interval_json(seed_interval(d, ctx.level))
    s_tau = (curve[tau].get("s_tau") or {}).get("mean")
    text = f"Pass@1 at τ = {tau} (s_τ {fmt_number(s_tau or 0, 100)}%) − unpruned (points) = "
    text += fmt_interval(interval, 100) if interval else fmt_stat(d, 100, sign=True)
    keeps = _seeded(ctx, d, lambda i: non_inferior(i, margin))
    if not base:
        text += "; the base was not scored on the curve's engine"
        verdict = insufficient(
            "no base model on the sparsity curve (an analysis from before it was scored: run it again)"
        )
        return claim(name, paper, text, gated(ctx.premise, verdict), rule, difference=interval)
    gain = stat_json(paired_difference(_by_seed(pruned), _by_seed(base)))
    gain_interval = interval_json(seed_interval(gain, ctx.level))
    text += "; − the base on the same engine = "
    text += fmt_interval(gain_interval, 100) if gain_interval else fmt_stat(gain, 100, sign=True)
    above = _seeded(ctx, gain, lambda i: direction(i, "greater"))
    verdicts = (keeps, above)
    if NOT_REPRODUCED in verdicts:
        verdict = NOT_REPRODUCED
    else:
        verdict = next((v for v in verdicts if v != REPRODUCED), REPRODUCED)
    return claim(
        name, paper, text, gated(ctx.premise, verdict), rule, difference=interval, over_base=gain_interval
    )


def _by_seed(data: dict[str, Any]) -> dict[int, float]:
    """``{seed: value}`` of a JSON Stat (by position when it kept no seeds)."""
    return dict(zip(data.get("seeds") or range(len(data["values"])), data["values"]))
