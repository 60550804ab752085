"""The sequential runs (ES→GRPO, GRPO→ES) against GRPO's trajectory, not the base–GRPO chord.

A point strictly between the base and GRPO on both axes is non-dominated by the three end points
by construction, and a sequential run whose ES half did nothing is GRPO after its own GRPO half.
So a sequential run's claim "non-dominated (Pass@1 vs Pass@K)" is judged on GRPO's path
(:mod:`~es_lightning.report.matched`): ``reproduced`` when its Pass@K is resolved above GRPO's at
the same Pass@1 (one-sided bound > 0) and GRPO after as many GRPO updates as the run's GRPO stage
(half the budget) does not dominate it; ``not reproduced (on GRPO's trajectory)`` when its Pass@K
is resolved below GRPO's plus ``verdicts.primary_margin`` (on the path, below it, or not
meaningfully above it), as for ES's own matched claims. The evidence is the seed t and the
two-level bootstrap (:mod:`~es_lightning.report.evidence`); the claims form the ``sequential``
family (Holm).
"""

from __future__ import annotations

from typing import Any

from es_lightning.report.claims.common import PCT, Context, claim, evidence_json, fmt_interval, tested
from es_lightning.report.claims.coverage import (
    difference,
    missing,
    primary_path,
    trajectory_paths,
    versus_path,
)
from es_lightning.report.trajectory import point_name
from es_lightning.report.verdicts import NOT_REPRODUCED

ON_PATH = f"{NOT_REPRODUCED} (on GRPO's trajectory)"
HALF_DOMINATES = f"{NOT_REPRODUCED} (GRPO at half the budget dominates)"


def half_budget_point(ctx: Context, method: str) -> tuple[int | None, str | None]:
    """GRPO's updates in ``method``'s GRPO stage and that point's outcome name (if on the path)."""
    trajectory = ctx.report.get("trajectory") or {}
    stages = (ctx.report.get("stages") or {}).get(method) or []
    updates = next((s["updates"] for s in stages if s.get("name") == trajectory.get("method")), None)
    if updates is None:
        total = (ctx.report.get("budgets") or {}).get(method)
        updates = total // 2 if total else None
    steps = trajectory.get("steps") or []
    if updates is None or updates not in steps:
        return updates, None
    return updates, trajectory["points"][steps.index(updates)]


def sequential_methods(ctx: Context) -> list[str]:
    """Every method but the frontier's, the permuted control, the ES variants and the methods whose
    trajectory is a path (GRPO sampled at another temperature)."""
    config = ctx.report["config"]
    skip = {
        "base",
        *config["frontier_methods"],
        ctx.settings.permuted_control,
        *(config.get("es_variants") or []),
        *trajectory_paths(ctx),
    }
    return [m for m in config["methods"] if m not in skip]


def _dominated(ctx: Context, half_1: Any, half_k: Any) -> bool:
    """GRPO at half the budget is resolved above the run on both axes."""
    alpha = 1.0 - ctx.level
    return half_1 is not None and half_k is not None and half_1.p_less() < alpha and half_k.p_less() < alpha


def sequential_claims(ctx: Context) -> list[dict[str, Any]]:
    out = []
    path = primary_path(ctx)
    rule = f"above GRPO's trajectory at matched Pass@1 (one-sided {ctx.level_pct}, seed t and two-level bootstrap, Holm over the sequential runs), not dominated by GRPO at half the budget"
    for method in sequential_methods(ctx):
        half, half_point = half_budget_point(ctx, method)
        for k in ctx.report["config"]["pareto_ks"]:
            name = f"{method} is non-dominated by GRPO's trajectory (Pass@1 vs Pass@{k})"
            paper = "sequential runs give non-dominated points"
            matched, note = versus_path(ctx, method, path, k)
            if matched is None:
                out.append(claim(name, paper, "–", note if isinstance(path, list) else path, rule))
                continue
            half_1 = difference(ctx, method, half_point, 1) if half_point else None
            half_k = difference(ctx, method, half_point, k) if half_point else None
            text = f"Pass@{k} − GRPO's at its Pass@1 (points) = {fmt_interval(evidence_json(matched), **PCT)}"
            if half_point:
                text += (
                    f"; − GRPO at update {half}: Pass@1 {fmt_interval(evidence_json(half_1), **PCT)}, "
                    f"Pass@{k} {fmt_interval(evidence_json(half_k), **PCT)}"
                )
            else:
                text += f"; GRPO at half the budget (update {half}) is not on the trajectory"
            base = claim(name, paper, text, "", rule, matched=evidence_json(matched))
            labels = {"not reproduced": ON_PATH}
            if _dominated(ctx, half_1, half_k):
                labels["reproduced"] = HALF_DOMINATES
            out.append(
                tested(base, "sequential", matched, matched.p_greater(), matched.p_less(), ctx.level, labels)
            )
    return out


__all__ = ["ON_PATH", "HALF_DOMINATES", "half_budget_point", "missing", "point_name", "sequential_claims"]
