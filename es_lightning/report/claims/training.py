"""Training-curve claims: GRPO's token entropy falls, ES keeps its own.

The entropy change of a run is its last logged ``entropy/<task>`` minus its first (before any
update); over seeds it gets the t interval. "ES keeps its entropy" is a non-inferiority claim with
the margin ``verdicts.entropy_margin`` (nats), judged only when ES learned: a run that does not
train keeps its entropy too.
"""

from __future__ import annotations

from typing import Any

from es_lightning.report.claims.common import Context, claim, fmt_interval, interval_json
from es_lightning.report.intervals import seed_interval
from es_lightning.report.stats import fmt_stat
from es_lightning.report.verdicts import ONE_SEED, direction, gated, insufficient, non_inferior

NO_CURVE = insufficient("no entropy curve logged")


def entropy_claims(ctx: Context) -> list[dict[str, Any]]:
    change = (ctx.report.get("curves") or {}).get("entropy_change") or {}
    task = (ctx.report.get("evaluations") or {}).get("task")
    by_method = change.get(task) or next(iter(change.values()), {})
    out = []
    grpo = by_method.get("grpo")
    interval = interval_json(seed_interval(grpo, ctx.level))
    verdict = NO_CURVE if not grpo else ONE_SEED if interval is None else direction(interval, "less")
    text = f"grpo entropy last − first = {fmt_interval(interval, spec='.3f') if interval else fmt_stat(grpo, spec='.3f', sign=True)}"
    rule = f"one-sided {ctx.level_pct} t bound over seeds < 0"
    out.append(
        claim("GRPO's token entropy falls", "falls over training", text, verdict, rule, change=interval)
    )

    es = by_method.get("es")
    margin = ctx.settings.entropy_margin
    interval = interval_json(seed_interval(es, ctx.level))
    verdict = NO_CURVE if not es else ONE_SEED if interval is None else non_inferior(interval, margin)
    text = f"es entropy last − first = {fmt_interval(interval, spec='.3f') if interval else fmt_stat(es, spec='.3f', sign=True)}"
    rule = f"premise, then non-inferiority: one-sided {ctx.level_pct} t bound > −{margin:g} nats"
    out.append(
        claim("ES keeps its entropy", "stays", text, gated(ctx.premise, verdict), rule, change=interval)
    )
    return out
