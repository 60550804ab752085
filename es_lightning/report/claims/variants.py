"""ES variants (``es_variants:``, e.g. low-rank ES): ES's coverage claims asked of each, and
whether it keeps full-rank ES's coverage.

A variant is ES with another setting (``perturbation: lowrank``), not a sequential run, so it is
not judged as one. The paper makes no claim about it; the rows ask of it what the paper asks of
ES, and one question of our own (does the variant keep what full-rank ES does at large K?):

- "V keeps or raises Pass@K": V − base at the largest Pareto K, non-inferiority with the report's
  ``pass_margin``;
- "V covers more than GRPO at Pass@K": V's Pass@K above GRPO's trajectory at V's Pass@1;
- "V keeps ES's Pass@K": V − es, non-inferiority with ``pass_margin``.

Each rests on V having learned (:func:`~es_lightning.report.claims.premise.learned`: V − base and
V − the permuted control resolved above 0 at Pass@1): a variant that did nothing sits at the base
model, keeps its Pass@K and would pass the first row. The last row rests on ES's premise too.
"""

from __future__ import annotations

from typing import Any

from es_lightning.report.claims.common import PCT, Context, claim, fmt_interval, points
from es_lightning.report.claims.coverage import difference, missing, versus_trajectory
from es_lightning.report.claims.premise import learned
from es_lightning.report.verdicts import gated, non_inferior

NOT_IN_PAPER = "not in the paper"


def es_variants(ctx: Context) -> list[str]:
    """The ``es_variants`` that are methods of this report."""
    config = ctx.report["config"]
    return [m for m in config.get("es_variants") or [] if m in config["methods"]]


def _non_inferior(ctx: Context, method: str, reference: str, k: int | None) -> tuple[dict | None, str]:
    d = difference(ctx, method, reference, k)
    return d, non_inferior(d, ctx.settings.pass_margin) if d else missing(ctx, method, reference)


def variant_claims(ctx: Context) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    k = ctx.big_k
    at_k = f"Pass@{k or 'K'}"
    keeps_rule = f"{{who}} learned, then non-inferiority: lower bound > −{points(ctx.settings.pass_margin)}"
    for v in es_variants(ctx):
        premise, numbers = learned(ctx, v)
        keeps, verdict = _non_inferior(ctx, v, "base", k)
        out.append(
            claim(
                f"{v} keeps or raises {at_k}",
                f"ES's claim, asked of {v}: no loss of coverage at large K",
                f"{v} − base {at_k} (points) = {fmt_interval(keeps, **PCT)}",
                gated(premise, verdict),
                keeps_rule.format(who=v),
                difference=keeps,
                premise=numbers,
            )
        )
        matched, endpoint, verdict = versus_trajectory(ctx, v, k)
        text = f"{v} {at_k} − GRPO's at {v}'s Pass@1 (points) = {fmt_interval(matched, **PCT)}"
        text += f"; {v} − grpo at the end points = {fmt_interval(endpoint, **PCT)}"
        rule = (
            f"{v} learned, then at matched Pass@1 on GRPO's trajectory: one-sided {ctx.level_pct} bound > 0"
        )
        out.append(
            claim(
                f"{v} covers more than GRPO at {at_k}",
                f"ES's claim, asked of {v}: above GRPO at large K",
                text,
                gated(premise, verdict),
                rule,
                matched=matched,
                endpoint=endpoint,
            )
        )
        versus_es, verdict = _non_inferior(ctx, v, "es", k)
        out.append(
            claim(
                f"{v} keeps ES's {at_k}",
                NOT_IN_PAPER,
                f"{v} − es {at_k} (points) = {fmt_interval(versus_es, **PCT)}",
                gated(premise, gated(ctx.premise, verdict)),
                keeps_rule.format(who=f"{v} and ES"),
                difference=versus_es,
            )
        )
    return out


__all__ = ["NOT_IN_PAPER", "es_variants", "variant_claims"]
