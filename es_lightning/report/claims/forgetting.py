"""The forgetting claim: ES's held-out skill does not collapse (the paper's "no catastrophic
forgetting" despite ES's large drift).

From the report's ``forgetting`` block (:mod:`~es_lightning.report.forgetting`): ES's premise
here is its own training task, Δ_es(in_domain, Pass@1) resolved above 0 (one-sided bound at the
report's level), else ``vacuous: ES did not learn its training task`` — a run that learned
nothing trivially forgets nothing. Then non-inferiority of Δ_es(out_of_domain, Pass@1) with the
setting's ``margin``: reproduced when the lower bound lies above −margin, not reproduced when the
upper bound lies below it. GRPO and any other forgetting method are tabulated beside ES, not
judged (the paper makes no claim about them).
"""

from __future__ import annotations

from typing import Any

from es_lightning.report.claims.common import PCT, Context, claim, fmt_interval, points
from es_lightning.report.forgetting import bootstraps, changes
from es_lightning.report.verdicts import REPRODUCED, direction, insufficient, non_inferior

ES = "es"
NAME = "ES's held-out skill does not collapse"
PAPER = "held-out tasks keep their accuracy despite ES's large drift"


def forgetting_claims(ctx: Context) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """``([claim], block with "changes")``; the block is ``None`` when the report has no setting."""
    block = ctx.report.get("forgetting")
    if not block:
        return [_claim(ctx, insufficient("no forgetting setting"), "–", None)], None
    settings = ctx.settings
    boots = bootstraps(block, settings.level, settings.bootstrap_resamples, settings.bootstrap_seed)
    found = changes(block, boots)
    block = {**block, "changes": found}
    ind, ood = block["in_domain"], block["out_of_domain"]
    if ES not in found:
        return [_claim(ctx, insufficient("no es run in the forgetting setting"), "–", None)], block
    learned = found[ES][ind].get("delta@1")
    kept = found[ES][ood].get("delta@1")
    margin = float(block["margin"])
    measured = (
        f"es Δ Pass@1 on {ood} (held out) = {fmt_interval(kept, **PCT)}; "
        f"on {ind} (trained) = {fmt_interval(learned, **PCT)}"
    )
    if learned is None or kept is None:
        verdict = insufficient(f"no per-problem outcomes of es before and after on {ind} and {ood}")
    elif direction(learned, "greater") != REPRODUCED:
        verdict = "vacuous: ES did not learn its training task"
    else:
        verdict = non_inferior(kept, margin)
    rule = (
        f"premise: in-domain Δ Pass@1 one-sided {ctx.level_pct} bound > 0; then non-inferiority: "
        f"held-out Δ Pass@1 lower bound > −{points(margin)}"
    )
    return [_claim(ctx, verdict, measured, rule, learned=learned, kept=kept)], block


def _claim(ctx: Context, verdict: str, measured: str, rule: str | None, **numbers: Any) -> dict[str, Any]:
    return claim(NAME, PAPER, measured, verdict, rule or "premise, then non-inferiority", **numbers)
