"""Ablation claims: population size, reward normalisation, estimator (final reward), κ_pair.

The final-reward comparisons are paired by seed with the t interval over seeds (one seed: not
resolved). κ_pair = Var(R⁺ − R⁻)/Var(R) is 2 for pairs whose two rewards are uncorrelated, below 2
when the pair's rewards move together; a variant's claim "on the paper's side of 2" is judged on
the mean of every update's κ_pair with its standard error over the updates (the run logs one per
update), one-sided at the report's level.
"""

from __future__ import annotations

from typing import Any

from es_lightning.report.claims.common import Context, claim, fmt_interval, interval_json
from es_lightning.report.intervals import seed_interval, updates_interval
from es_lightning.report.stats import fmt_number, fmt_stat, paired_difference, stat_json
from es_lightning.report.verdicts import ONE_SEED, direction, insufficient

UNCORRELATED_KAPPA = 2.0
"""κ_pair of a pair whose two rewards are uncorrelated: Var(R⁺ − R⁻) = 2 Var(R)."""


def _seeds(data: dict[str, Any] | None) -> dict[int, float]:
    if not data:
        return {}
    return dict(zip(data.get("seeds") or range(len(data["values"])), data["values"]))


def ablation_claims(ctx: Context) -> list[dict[str, Any]]:
    ablations, out = ctx.report.get("ablations") or {}, []

    def compare(name: str, a: str | None, b: str | None, title: str, paper: str) -> None:
        rows = ablations.get(name, {}).get("rows", {})
        ra, rb = rows.get(a or "", {}).get("final_reward"), rows.get(b or "", {}).get("final_reward")
        d = stat_json(paired_difference(_seeds(ra), _seeds(rb))) if ra and rb else None
        interval = interval_json(seed_interval(d, ctx.level))
        verdict = (
            insufficient("not run")
            if not d
            else ONE_SEED
            if interval is None
            else direction(interval, "greater")
        )
        shown = fmt_interval(interval, spec=".3f") if interval else fmt_stat(d, spec=".3f", sign=True)
        rule = f"one-sided {ctx.level_pct} t bound over seeds > 0"
        out.append(
            claim(title, paper, f"final reward {a} − {b} = {shown}", verdict, rule, difference=interval)
        )

    rows = ablations.get("population_size", {}).get("rows", {})
    sizes = [v for _, v in sorted((float(v), v) for v, row in rows.items() if row.get("final_reward"))]
    low, high = (sizes[0], sizes[-1]) if len(sizes) > 1 else (None, None)
    compare("population_size", high, low, "A larger population reaches a higher reward", "N ablation")
    compare("normalization", "zscore", "none", "z-score normalisation matters", "zscore above none")
    compare("estimator", "one_point", "antithetic", "One-point beats antithetic", "at equal rollout budget")
    for name, data in ablations.items():
        for label, row in data["rows"].items():
            ref = row.get("reference")
            if ref is None:
                continue
            expect = "greater" if ref > UNCORRELATED_KAPPA else "less"
            series = row.get("kappa_pair_updates")
            interval = interval_json(updates_interval(series, ctx.level)) if series else None
            if interval is None:
                verdict = insufficient("no per-update κ_pair" if row.get("kappa_pair") else "not run")
                text = f"κ_pair[{label}] = {fmt_stat(row.get('kappa_pair'), spec='.4f')}"
            else:
                verdict = direction(interval, expect, UNCORRELATED_KAPPA)
                text = f"κ_pair[{label}] = {fmt_interval(interval, spec='.4f', sign=False)} over {interval['n']} updates"
            paper = f"{fmt_number(ref, spec='.4f')} ({'>' if expect == 'greater' else '<'} 2)"
            rule = f"one-sided {ctx.level_pct} bound (standard error over updates) against 2"
            title = f"κ_pair {name}/{label} on the paper's side of 2"
            out.append(claim(title, paper, text, verdict, rule, kappa=interval, reference=ref))
    return out
