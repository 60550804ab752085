"""The sequential runs (ES→GRPO, GRPO→ES) against GRPO's trajectory, not the base–GRPO chord.

A point strictly between the base and GRPO on both axes is non-dominated by the three end points
by construction, and a sequential run whose ES half did nothing is GRPO after its own GRPO half.
So a sequential run's claim "non-dominated (Pass@1 vs Pass@K)" is judged on GRPO's path
(:mod:`~es_lightning.report.matched`): ``reproduced`` when its Pass@K is resolved above GRPO's at
the same Pass@1 (one-sided bound > 0) and GRPO after as many GRPO updates as the run's GRPO stage
(half the budget) does not dominate it; ``not reproduced (on GRPO's trajectory)`` when the bound
on the other side is ≤ 0 (on the path or below it).
"""

from __future__ import annotations

from typing import Any

from es_lightning.report.claims.common import PCT, Context, claim, fmt_interval, interval_json
from es_lightning.report.claims.coverage import NO_OUTCOMES, difference, missing, trajectory_path
from es_lightning.report.matched import matched_difference
from es_lightning.report.trajectory import point_name
from es_lightning.report.verdicts import NOT_REPRODUCED, REPRODUCED, UNRESOLVED, direction

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
    """Every method but the frontier's, the permuted control and the ES variants."""
    config = ctx.report["config"]
    skip = {
        "base",
        *config["frontier_methods"],
        ctx.settings.permuted_control,
        *(config.get("es_variants") or []),
    }
    return [m for m in config["methods"] if m not in skip]


def _judge(matched: dict | None, half_1: dict | None, half_k: dict | None) -> str:
    if matched is None:
        return NO_OUTCOMES
    on_path = direction(matched, "greater")
    if on_path != REPRODUCED:
        return ON_PATH if on_path == NOT_REPRODUCED else UNRESOLVED
    if direction(half_1, "less") == REPRODUCED and direction(half_k, "less") == REPRODUCED:
        return HALF_DOMINATES
    return REPRODUCED


def sequential_claims(ctx: Context) -> list[dict[str, Any]]:
    out = []
    path = trajectory_path(ctx)
    rule = f"above GRPO's trajectory at matched Pass@1 (one-sided {ctx.level_pct} bound > 0), not dominated by GRPO at half the budget"
    for method in sequential_methods(ctx):
        half, half_point = half_budget_point(ctx, method)
        for k in ctx.report["config"]["pareto_ks"]:
            name = f"{method} is non-dominated by GRPO's trajectory (Pass@1 vs Pass@{k})"
            paper = "sequential runs give non-dominated points"
            if isinstance(path, str) or not ctx.boot or not ctx.boot.has(method, k):
                verdict = path if isinstance(path, str) else missing(ctx, method)
                out.append(claim(name, paper, "–", verdict, rule))
                continue
            matched = interval_json(matched_difference(ctx.boot, method, path, k))
            half_1 = difference(ctx, method, half_point, 1) if half_point else None
            half_k = difference(ctx, method, half_point, k) if half_point else None
            text = f"Pass@{k} − GRPO's at its Pass@1 (points) = {fmt_interval(matched, **PCT)}"
            if half_point:
                text += (
                    f"; − GRPO at update {half}: Pass@1 {fmt_interval(half_1, **PCT)}, "
                    f"Pass@{k} {fmt_interval(half_k, **PCT)}"
                )
            else:
                text += f"; GRPO at half the budget (update {half}) is not on the trajectory"
            verdict = _judge(matched, half_1, half_k)
            out.append(
                claim(name, paper, text, verdict, rule, matched=matched, half_pass1=half_1, half_passk=half_k)
            )
    return out


__all__ = ["ON_PATH", "HALF_DOMINATES", "half_budget_point", "point_name", "sequential_claims"]
