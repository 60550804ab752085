"""Pass@K claims: GRPO's accuracy and coverage, ES's coverage, ES against GRPO's trajectory.

All from the paired bootstrap over problems (pooled over seeds) of the report's ``outcomes``;
without them every claim here is ``insufficient data``. ES's coverage claims are judged only when
ES learned (:mod:`~es_lightning.report.claims.premise`), and "ES covers more than GRPO" compares
ES with GRPO where GRPO was as accurate as ES (its trajectory at ES's Pass@1,
:mod:`~es_lightning.report.matched`), not with GRPO's end point: an untrained model already
covers more than a GRPO that traded coverage for accuracy.
"""

from __future__ import annotations

from typing import Any

from es_lightning.report.claims.common import PCT, Context, claim, fmt_interval, interval_json, points
from es_lightning.report.matched import matched_difference
from es_lightning.report.verdicts import direction, gated, insufficient, non_inferior

NO_OUTCOMES = insufficient("no per-problem outcomes")


def difference(ctx: Context, a: str, b: str, k: int | None) -> dict[str, Any] | None:
    return interval_json(ctx.boot.difference(a, b, k)) if ctx.boot and k else None


def missing(ctx: Context, *methods: str) -> str:
    """Why a comparison of ``methods`` has no interval."""
    if ctx.boot is None:
        return NO_OUTCOMES
    absent = [m for m in methods if not ctx.boot.has(m)]
    return insufficient(f"no per-problem outcomes of {', '.join(absent)}") if absent else NO_OUTCOMES


def trajectory_path(ctx: Context) -> list[str] | str:
    """GRPO's path as outcome names, or why there is none."""
    trajectory = ctx.report.get("trajectory")
    if not trajectory:
        return insufficient("no GRPO trajectory")
    if ctx.boot is None:
        return NO_OUTCOMES
    missing = [p for p in trajectory["points"] if not ctx.boot.has(p)]
    if missing:
        return insufficient(f"GRPO's trajectory lacks outcomes at {', '.join(missing)}")
    return list(trajectory["points"])


def _direction_claim(
    ctx: Context, name: str, paper: str, what: str, d: dict | None, expect: str, methods: tuple[str, str]
) -> dict:
    verdict = direction(d, expect) if d else missing(ctx, *methods)
    sign = ">" if expect == "greater" else "<"
    rule = f"one-sided {ctx.level_pct} bootstrap bound {sign} 0"
    return claim(name, paper, f"{what} = {fmt_interval(d, **PCT)}", verdict, rule, difference=d)


def coverage_claims(ctx: Context) -> list[dict[str, Any]]:
    k = ctx.big_k
    at_k = f"Pass@{k or 'K'}"
    out = [
        _direction_claim(
            ctx,
            "GRPO raises Pass@1",
            "Pass@1 above the starting model",
            "grpo − base Pass@1 (points)",
            difference(ctx, "grpo", "base", 1),
            "greater",
            ("grpo", "base"),
        ),
        _direction_claim(
            ctx,
            f"GRPO lowers {at_k} below the starting model",
            "lower coverage at large K",
            f"grpo − base {at_k} (points)",
            difference(ctx, "grpo", "base", k),
            "less",
            ("grpo", "base"),
        ),
    ]
    margin = ctx.settings.pass_margin
    keeps = difference(ctx, "es", "base", k)
    verdict = gated(ctx.premise, non_inferior(keeps, margin) if keeps else missing(ctx, "es", "base"))
    out.append(
        claim(
            f"ES keeps or raises {at_k}",
            "no loss of coverage at large K",
            f"es − base {at_k} (points) = {fmt_interval(keeps, **PCT)}",
            verdict,
            f"premise, then non-inferiority: lower bound > −{points(margin)}",
            difference=keeps,
        )
    )
    out.append(_versus_grpo(ctx, k, at_k))
    return out


def versus_trajectory(ctx: Context, method: str, k: int | None) -> tuple[dict | None, dict | None, str]:
    """``method``'s Pass@K minus GRPO's trajectory at ``method``'s Pass@1, its difference to
    GRPO's end point, and the verdict "above the trajectory" (before any premise)."""
    endpoint = difference(ctx, method, "grpo", k)
    path = trajectory_path(ctx)
    matched = (
        None
        if isinstance(path, str) or not k
        else interval_json(matched_difference(ctx.boot, method, path, k))
    )
    if isinstance(path, str):
        return matched, endpoint, path
    if matched is None:
        return matched, endpoint, missing(ctx, method, *path)
    return matched, endpoint, direction(matched, "greater")


def _versus_grpo(ctx: Context, k: int | None, at_k: str) -> dict[str, Any]:
    """ES's Pass@K against GRPO's trajectory at ES's Pass@1."""
    name = f"ES covers more than GRPO at {at_k}"
    rule = f"premise, then at matched Pass@1 on GRPO's trajectory: one-sided {ctx.level_pct} bound > 0"
    matched, endpoint, verdict = versus_trajectory(ctx, "es", k)
    text = f"es {at_k} − GRPO's at es's Pass@1 (points) = {fmt_interval(matched, **PCT)}"
    text += f"; es − grpo at the end points = {fmt_interval(endpoint, **PCT)}"
    return claim(
        name,
        "ES above GRPO at large K",
        text,
        gated(ctx.premise, verdict),
        rule,
        matched=matched,
        endpoint=endpoint,
    )
