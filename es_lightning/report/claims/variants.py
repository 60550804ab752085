"""ES variants (``es_variants:``, e.g. low-rank ES): ES's coverage claims asked of each, and
whether it keeps full-rank ES's coverage.

A variant is ES with another setting (``perturbation: lowrank``), not a sequential run, so it is
not judged as one. The paper makes no claim about it; the rows ask of it what the paper asks of
ES, and one question of our own (does the variant keep what full-rank ES does at large K?):

- "V keeps Pass@K (against its permuted control)": V − the permuted control at the largest Pareto K,
  non-inferiority with the report's ``pass_margin``;
- "V covers more than GRPO at Pass@K": V's Pass@K above GRPO's trajectory at V's Pass@1;
- "V keeps ES's Pass@K": V − es, non-inferiority with ``pass_margin``.

They form the ``variants`` family (Holm); the evidence is the seed t and the two-level bootstrap.

Each rests on V having learned (:func:`~es_lightning.report.claims.premise.learned`: V − base and
V − the permuted control resolved above 0 at Pass@1): a variant that did nothing sits at the base
model, keeps its Pass@K and would pass the first row. The last row rests on ES's premise too.
"""

from __future__ import annotations

from typing import Any

from es_lightning.report.claims.common import PCT, Context, claim, evidence_json, fmt_interval, points, tested
from es_lightning.report.claims.coverage import (
    SLOW_GRPO,
    difference,
    keeps_versus_control,
    matched_claim,
    missing,
    primary_path,
)
from es_lightning.report.claims.premise import learned

NOT_IN_PAPER = "not in the paper"


def es_variants(ctx: Context) -> list[str]:
    """The ``es_variants`` that are methods of this report."""
    config = ctx.report["config"]
    return [m for m in config.get("es_variants") or [] if m in config["methods"]]


def variant_claims(ctx: Context) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    k = ctx.big_k
    at_k = f"Pass@{k or 'K'}"
    margin = ctx.settings.pass_margin
    for v in es_variants(ctx):
        premise, _ = learned(ctx, v)
        for row in (
            keeps_versus_control(ctx, v, k, at_k, premise),
            matched_claim(
                ctx, v, primary_path(ctx), k or 1, "variants", "GRPO", SLOW_GRPO.replace("ES", v), premise
            ),
        ):
            test = row.get("test")
            if test:
                test["family"] = "variants"
            out.append({**row, "paper": f"ES's claim, asked of {v}"})
        d = difference(ctx, v, "es", k)
        base = claim(
            f"{v} keeps ES's {at_k}",
            NOT_IN_PAPER,
            f"{v} − es {at_k} (points) = {fmt_interval(evidence_json(d), **PCT)}",
            "",
            f"{v} and ES learned, then non-inferiority: lower bound > −{points(margin)}",
            difference=evidence_json(d),
        )
        gate = premise or ctx.premise
        if gate is not None or d is None:
            out.append({**base, "verdict": gate if gate is not None else missing(ctx, v, "es")})
        else:
            out.append(tested(base, "variants", d, d.p_greater(-margin), d.p_less(-margin), ctx.level))
    return out


__all__ = ["NOT_IN_PAPER", "es_variants", "variant_claims"]
