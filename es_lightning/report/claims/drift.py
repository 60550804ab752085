"""Drift claims: how far ES moves, how sparse its update is, where its largest updates are.

Each is a number per run (``es-lightning analyze`` on the final checkpoint), so its evidence is
the seed-level t test (one seed: not resolved). None reads a raw number that the step size sets:
once ES's premise holds, a random walk of ES's α, N and T drifts exactly as far as ES (rel-L2 =
α·√(P·T/N)/‖θ₀‖) and is exactly as "sparse" (s_τ = erf(τ / (√2·α·√(T/N)))), and the permuted-reward
control takes that walk. So ES is judged by its excess over its control, paired by seed:

- "ES drifts further than GRPO": ES's rel-L2 over its control's above ``1 + verdicts.drift_margin``
  (drift that the rewards caused) *and* ES's over GRPO's above 1 (the paper's ratio); the
  random-walk null is shown beside.
- "Most ES updates are tiny": ES's s_τ at τ = 1.5e-3 minus its control's above
  ``verdicts.sparsity_margin`` (the update is sparser than its random walk); the paper's 78–93 %
  and the null are shown beside.
- "ES's largest updates are in norm / attention": per seed, those kinds' share of ES's top-k above
  the control's share; GRPO's "embedding / lm_head": per seed, above their share of the parameters
  (the top-k share of i.i.d. updates). Seeds, not the pooled top-k coordinates, are the unit.
- "Zeroing updates below τ keeps Pass@1": the pruned model above the base on the same engine and
  not more than ``pass_margin`` below the unpruned one.

GRPO's attribution is in the ``grpo`` family, the rest in ``es_mechanism`` (Holm within each).
"""

from __future__ import annotations

from typing import Any

from es_lightning.report.claims.common import Context, claim, evidence_json, fmt_interval, points, tested
from es_lightning.report.evidence import Evidence, seed_evidence
from es_lightning.report.stats import fmt_number
from es_lightning.report.verdicts import gated, insufficient

NO_ANALYSIS = insufficient("no es-lightning analyze output")
TAU = "0.0015"


def by_seed(data: dict[str, Any] | None) -> dict[int, float]:
    """``{seed: value}`` of a JSON Stat (by position when it kept no seeds)."""
    if not data:
        return {}
    return dict(zip(data.get("seeds") or range(len(data["values"])), data["values"]))


def paired(ctx: Context, a: dict[int, float], b: dict[int, float], ratio: bool = False) -> Evidence | None:
    seeds = sorted(set(a) & set(b))
    if not seeds:
        return None
    values = [a[s] / b[s] if ratio else a[s] - b[s] for s in seeds if not ratio or b[s] != 0]
    return seed_evidence(values, ctx.level)


def _null(method: dict[str, Any], *path: str) -> float | None:
    node: Any = method.get("null") or {}
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    return node.get("mean") if isinstance(node, dict) else None


def _judged(
    ctx: Context, base: dict, family: str, up: Evidence | None, p: float, q: float | None, gate: str | None
) -> dict:
    if gate is not None:
        return {**base, "verdict": gate}
    if up is None:
        return {**base, "verdict": NO_ANALYSIS}
    return tested(base, family, up, p, q, ctx.level)


def drift_claims(ctx: Context) -> list[dict[str, Any]]:
    methods = (ctx.report.get("drift") or {}).get("methods") or {}
    es, grpo = methods.get("es") or {}, methods.get("grpo") or {}
    control = methods.get(ctx.settings.permuted_control) or {}
    gate = ctx.premise
    if ctx.premise is None and not control:
        gate = insufficient(f"no analysis of the permuted control {ctx.settings.permuted_control!r}")
    out = []

    grow = 1.0 + ctx.settings.drift_margin
    excess = paired(ctx, by_seed(es.get("rel_l2")), by_seed(control.get("rel_l2")), ratio=True)
    ratio = paired(ctx, by_seed(es.get("rel_l2")), by_seed(grpo.get("rel_l2")), ratio=True)
    null = _null(es, "rel_l2")
    text = f"ES rel-L2 / its control's = {fmt_interval(evidence_json(excess), sign=False, spec='.3f')}×"
    text += f"; es/grpo = {fmt_interval(evidence_json(ratio), sign=False, spec='.2f')}×"
    text += f" (random-walk null {fmt_number(null, spec='.3g')})" if null is not None else ""
    rule = f"premise, then over seeds (one-sided t, Holm): ES / its control > {grow:g} and ES / GRPO > 1"
    base = claim(
        "ES drifts further than GRPO (rel-L2)",
        "≈ 40×",
        text,
        "",
        rule,
        excess=evidence_json(excess),
        ratio=evidence_json(ratio),
    )
    both = excess is not None and ratio is not None
    p = max(excess.p_greater(grow), ratio.p_greater(1.0)) if both else 1.0
    q = min(1.0, 2 * min(excess.p_less(grow), ratio.p_less(1.0))) if both else None
    out.append(_judged(ctx, base, "es_mechanism", excess if both else None, p, q, gate))

    s_tau = by_seed((es.get("sparsity") or {}).get(TAU))
    excess = paired(ctx, s_tau, by_seed((control.get("sparsity") or {}).get(TAU)))
    null = _null(es, "sparsity", TAU)
    mean = sum(s_tau.values()) / len(s_tau) if s_tau else None
    text = f"ES s_τ(1.5e-3) − control's (points) = {fmt_interval(evidence_json(excess), 100)}"
    text += f"; ES s_τ {fmt_number(mean, 100)}%" if mean is not None else ""
    text += f" (random-walk null {fmt_number(null, 100)}%)" if null is not None else ""
    margin = ctx.settings.sparsity_margin
    rule = f"premise, then over seeds (one-sided t, Holm): ES's s_τ − its control's > {points(margin)} (sparser than its random walk)"
    base = claim(
        "Most ES updates are tiny", "s_τ at τ = 1.5e-3 ≈ 78–93%", text, "", rule, excess=evidence_json(excess)
    )
    out.append(_judged(ctx, base, "es_mechanism", excess, *(_pq(excess, margin)), gate))

    out.append(_attribution(ctx, "es", ("norm", "attention"), "norm / attention", gate))
    out.append(_attribution(ctx, "grpo", ("embedding", "lm_head"), "embedding / lm_head", None))
    out.append(_functional(ctx, es))
    return out


def _pq(e: Evidence | None, threshold: float = 0.0) -> tuple[float, float | None]:
    return (e.p_greater(threshold), e.p_less(threshold)) if e is not None else (1.0, None)


def shares(method: dict[str, Any], kinds: tuple[str, ...]) -> dict[int, float]:
    """Per seed, the share of ``kinds`` in the method's top-k largest updates."""
    counts = method.get("top_k_by_kind") or {}
    per_kind = {kind: by_seed(stat) for kind, stat in counts.items() if stat}
    seeds = sorted(set().union(*per_kind.values())) if per_kind else []
    out = {}
    for s in seeds:
        total = sum(v.get(s, 0.0) for v in per_kind.values())
        if total:
            out[s] = sum(per_kind.get(k, {}).get(s, 0.0) for k in kinds) / total
    return out


def _attribution(ctx: Context, method: str, kinds: tuple[str, ...], paper: str, gate: str | None) -> dict:
    drift = ctx.report.get("drift") or {}
    methods = drift.get("methods") or {}
    mine = shares(methods.get(method) or {}, kinds)
    expected = sum((drift.get("kind_share") or {}).get(k, 0.0) for k in kinds)
    if method == "es":
        reference = shares(methods.get(ctx.settings.permuted_control) or {}, kinds)
        against = "its permuted control's share"
        why = None if reference else insufficient(f"no top-k attribution of {ctx.settings.permuted_control}")
    else:
        reference = dict.fromkeys(mine, expected)
        against = f"their parameter share {100 * expected:.1f}%"
        why = (
            None
            if drift.get("kind_share")
            else insufficient("no parameter shares by kind (analyze's null block)")
        )
    excess = paired(ctx, mine, reference) if why is None else None
    family = "grpo" if method == "grpo" else "es_mechanism"
    text = (
        f"top-k share of {'/'.join(kinds)} − {against} (points) = {fmt_interval(evidence_json(excess), 100)}"
    )
    if mine:
        text += f"; share {100 * sum(mine.values()) / len(mine):.1f}% (parameters {100 * expected:.1f}%)"
    rule = f"per seed (one-sided t, Holm): their share of the top-k − {against} > 0"
    base = claim(
        f"{method.upper()}'s largest updates are in {paper}",
        paper,
        text,
        "",
        rule,
        excess=evidence_json(excess),
    )
    return _judged(ctx, base, family, excess, *(_pq(excess)), gate or (why if mine else None))


def _functional(ctx: Context, es: dict[str, Any]) -> dict[str, Any]:
    """Zeroing the updates with |Δ| ≤ τ (the largest τ evaluated) keeps ES's gain: the pruned
    model above the base scored on the same engine and seed, and not more than ``pass_margin``
    below the unpruned one."""
    name = "ES's update is functionally sparse (zeroing updates below τ keeps Pass@1)"
    margin = ctx.settings.pass_margin
    rule = f"premise, then over seeds (one-sided t, Holm): pruned − base > 0 and pruned − unpruned > −{points(margin)}"
    paper = "pruned updates keep performance"
    curve = es.get("sparsity_curve") or {}
    taus = sorted((t for t in curve if float(t) > 0 and (curve[t].get("pass@1"))), key=float)
    full = (curve.get("0") or {}).get("pass@1")
    base = (es.get("sparsity_curve_base") or {}).get("pass@1")
    if not taus or not full or not base:
        why = (
            "no evaluated thresholded exports"
            if not taus or not full
            else "no base model on the sparsity curve"
        )
        return claim(name, paper, "–", gated(ctx.premise, insufficient(why)), rule)
    tau = taus[-1]
    pruned = by_seed(curve[tau]["pass@1"])
    kept, gain = paired(ctx, pruned, by_seed(full)), paired(ctx, pruned, by_seed(base))
    s_tau = (curve[tau].get("s_tau") or {}).get("mean")
    text = f"Pass@1 at τ = {tau} (s_τ {fmt_number(s_tau or 0, 100)}%) − unpruned (points) = {fmt_interval(evidence_json(kept), 100)}"
    text += f"; − the base on the same engine = {fmt_interval(evidence_json(gain), 100)}"
    row = claim(name, paper, text, "", rule, difference=evidence_json(kept), over_base=evidence_json(gain))
    if kept is None or gain is None:
        return {**row, "verdict": gated(ctx.premise, NO_ANALYSIS)}
    p = max(kept.p_greater(-margin), gain.p_greater())
    q = min(1.0, 2 * min(kept.p_less(-margin), gain.p_less()))
    return _judged(ctx, row, "es_mechanism", gain, p, q, ctx.premise)
