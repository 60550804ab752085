"""ES's premise: ES-relative claims are judged only when ES learned something.

A run whose weights took a random walk (no reward signal) keeps its entropy, drifts far, shows a
sparse-looking update and sits at the base model's coverage; so every claim about what ES does
differently (coverage vs GRPO, entropy, drift ratio, sparsity, attribution, functional
sparsity) first asks, on the paired bootstrap over problems at Pass@1:

1. ES − base resolved above 0 (one-sided bound at the report's level), else
   ``vacuous: ES did not learn``;
2. ES − the permuted-reward control (``verdicts.permuted_control``: ES's recipe with
   ``--strategy.init_args.reward_control permuted``, the same compute and random walk with the
   rewards shuffled among the members) resolved above 0, else ``vacuous: ES did not beat its
   permuted-reward control``; without that method: ``insufficient data: no permuted control``.
"""

from __future__ import annotations

from es_lightning.report.claims.common import Context, interval_json
from es_lightning.report.verdicts import REPRODUCED, VACUOUS, direction, insufficient

ES = "es"


def check_premise(ctx: Context) -> None:
    """Set ``ctx.premise`` (``None`` when ES learned) and the numbers it rests on."""
    control = ctx.settings.permuted_control
    if ctx.boot is None:
        ctx.premise = insufficient("no per-problem outcomes to check that ES learned")
        return
    if not ctx.boot.has(ES) or not ctx.boot.has("base"):
        ctx.premise = insufficient("no per-problem outcomes of es and base")
        return
    over_base = interval_json(ctx.boot.difference(ES, "base", 1))
    ctx.premise_numbers["es_minus_base_pass1"] = over_base
    if direction(over_base, "greater") != REPRODUCED:
        ctx.premise = VACUOUS
        return
    if not ctx.boot.has(control):
        ctx.premise = insufficient(f"no permuted control (method {control!r})")
        return
    over_control = interval_json(ctx.boot.difference(ES, control, 1))
    ctx.premise_numbers["es_minus_control_pass1"] = over_control
    if direction(over_control, "greater") != REPRODUCED:
        ctx.premise = "vacuous: ES did not beat its permuted-reward control"
        return
    ctx.premise = None
