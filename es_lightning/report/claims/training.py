"""Training-curve claims: GRPO's token entropy falls; ES keeps its own.

The entropy change of a run is its last logged ``entropy/<task>`` minus its first (before any
update); over seeds it gets the seed-level t test. A run that does not train keeps its entropy,
and a random walk of ES's step size moves it too, so "ES keeps its entropy" is asked twice, both
judged only when ES learned:

- against its permuted-reward control, paired by seed: ES's change − the control's change not
  below −``verdicts.entropy_margin`` nats (non-inferiority);
- at matched gain: ES's last entropy minus GRPO's entropy where GRPO was as accurate
  (:func:`~es_lightning.report.matched.path_coverage` on each seed's path of (Pass@1, entropy) at
  the trajectory steps where both were measured) above 0.

GRPO's claim is in the ``grpo`` family, ES's in ``es_mechanism`` (Holm within each).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from es_lightning.report.claims.common import Context, claim, evidence_json, fmt_interval, tested
from es_lightning.report.claims.coverage import trajectory_paths
from es_lightning.report.claims.drift import by_seed, paired
from es_lightning.report.evidence import Evidence, seed_evidence
from es_lightning.report.matched import path_coverage
from es_lightning.report.verdicts import insufficient

NO_CURVE = insufficient("no entropy curve logged")


def _changes(ctx: Context) -> tuple[dict[str, Any], str | None]:
    curves = ctx.report.get("curves") or {}
    change = curves.get("entropy_change") or {}
    task = (ctx.report.get("evaluations") or {}).get("task")
    key = task if task in change else next(iter(change), None)
    return (change.get(key) or {}), key


def entropy_claims(ctx: Context) -> list[dict[str, Any]]:
    by_method, task = _changes(ctx)
    out = []
    grpo = (
        seed_evidence(list(by_seed(by_method.get("grpo")).values()), ctx.level)
        if by_method.get("grpo")
        else None
    )
    base = claim(
        "GRPO's token entropy falls",
        "falls over training",
        f"grpo entropy last − first = {fmt_interval(evidence_json(grpo), spec='.3f')}",
        "",
        "over seeds (one-sided t, Holm): < 0",
        change=evidence_json(grpo),
    )
    out.append(
        {**base, "verdict": NO_CURVE}
        if grpo is None
        else tested(base, "grpo", grpo, grpo.p_less(), grpo.p_greater(), ctx.level)
    )

    margin = ctx.settings.entropy_margin
    control = ctx.settings.permuted_control
    es, ctrl = by_seed(by_method.get("es")), by_seed(by_method.get(control))
    d = paired(ctx, es, ctrl) if es and ctrl else None
    text = f"es − {control} entropy change = {fmt_interval(evidence_json(d), spec='.3f')}"
    if es:
        text += f" (es alone {sum(es.values()) / len(es):+.3f})"
    rule = f"premise, then over seeds (one-sided t, Holm): ES's change − its control's > −{margin:g} nats"
    base = claim(
        "ES keeps its entropy (against its permuted control)",
        "stays",
        text,
        "",
        rule,
        difference=evidence_json(d),
    )
    gate = ctx.premise or (
        None if d is not None else (NO_CURVE if not es else insufficient(f"no entropy curve of {control}"))
    )
    out.append(
        {**base, "verdict": gate}
        if gate
        else tested(base, "es_mechanism", d, d.p_greater(-margin), d.p_less(-margin), ctx.level)
    )

    matched, why = _matched_entropy(ctx, task)
    text = f"es entropy − GRPO's at es's Pass@1 = {fmt_interval(evidence_json(matched), spec='.3f')}"
    base = claim(
        "ES keeps more entropy than GRPO at the same Pass@1",
        "GRPO's entropy collapses, ES's does not",
        text,
        "",
        "premise, then per seed against GRPO's path of (Pass@1, entropy) (one-sided t, Holm): > 0",
        matched=evidence_json(matched),
    )
    gate = ctx.premise or why
    out.append(
        {**base, "verdict": gate}
        if gate
        else tested(base, "es_mechanism", matched, matched.p_greater(), matched.p_less(), ctx.level)
    )
    return out


def _matched_entropy(ctx: Context, task: str | None) -> tuple[Evidence | None, str | None]:
    """Per seed: ES's last entropy − GRPO's entropy path at ES's Pass@1."""
    series = ((ctx.report.get("curves") or {}).get("entropy_by_seed") or {}).get(task or "") or {}
    paths = trajectory_paths(ctx)
    if not paths or ctx.boot is None:
        return None, insufficient("no GRPO trajectory")
    method, path = next(iter(paths.items()))
    steps = ((ctx.report.get("trajectory") or {}).get("paths") or {}).get(method, {}).get("steps") or (
        ctx.report.get("trajectory") or {}
    ).get("steps")
    if isinstance(path, str) or not steps:
        return None, path if isinstance(path, str) else insufficient("no trajectory steps")
    if not series.get(method) or not series.get("es"):
        return None, insufficient(f"no per-seed entropy curves of es and {method}")
    values = []
    for seed in ctx.boot.seeds("es", *path):
        logged = {int(step): v for step, v in series[method].get(str(seed), [])}
        es_curve = series["es"].get(str(seed), [])
        pairs = [
            (ctx.boot.values(p, 1, [seed]).mean(), logged[s]) for p, s in zip(path, steps) if s in logged
        ]
        if len(pairs) < 2 or not es_curve:
            continue
        xs, ys = np.array(pairs).T
        star, _ = path_coverage(xs[None, :], ys[None, :], np.array([ctx.boot.values("es", 1, [seed]).mean()]))
        values.append(float(es_curve[-1][1] - star[0]))
    if not values:
        return None, insufficient("no seed with entropy at two or more trajectory points")
    return seed_evidence(values, ctx.level), None
