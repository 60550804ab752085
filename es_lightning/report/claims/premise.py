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

:func:`learned` asks the same of any method (an ES variant's claims rest on it).
"""

from __future__ import annotations

from es_lightning.report.claims.common import Context, interval_json
from es_lightning.report.verdicts import REPRODUCED, VACUOUS, direction, insufficient

ES = "es"


def learned(ctx: Context, method: str) -> tuple[str | None, dict]:
    """Why ``method`` cannot be said to have learned (``None``: it beat the base and the
    permuted-reward control at Pass@1), and the differences that decided it."""
    control = ctx.settings.permuted_control
    numbers: dict = {}
    if ctx.boot is None:
        return insufficient(f"no per-problem outcomes to check that {method} learned"), numbers
    if not ctx.boot.has(method) or not ctx.boot.has("base"):
        return insufficient(f"no per-problem outcomes of {method} and base"), numbers
    over_base = interval_json(ctx.boot.difference(method, "base", 1))
    numbers[f"{method}_minus_base_pass1"] = over_base
    if direction(over_base, "greater") != REPRODUCED:
        return VACUOUS if method == ES else f"vacuous: {method} did not learn", numbers
    if not ctx.boot.has(control):
        return insufficient(f"no permuted control (method {control!r})"), numbers
    over_control = interval_json(ctx.boot.difference(method, control, 1))
    numbers[f"{method}_minus_control_pass1"] = over_control
    if direction(over_control, "greater") != REPRODUCED:
        who = "ES" if method == ES else method
        return f"vacuous: {who} did not beat its permuted-reward control", numbers
    return None, numbers


def check_premise(ctx: Context) -> None:
    """Set ``ctx.premise`` (``None`` when ES learned) and the numbers it rests on."""
    ctx.premise, numbers = learned(ctx, ES)
    ctx.premise_numbers.update(numbers)
