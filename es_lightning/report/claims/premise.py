"""ES's premise: ES-relative claims are judged only when ES learned something.

A run whose weights took a random walk (no reward signal) keeps its entropy, drifts far, shows a
sparse-looking update and sits at the base model's coverage; so every claim about what ES does
differently (coverage vs GRPO, entropy, drift ratio, sparsity, attribution, functional
sparsity) first asks, at Pass@1, with the seed-level t test and the two-level bootstrap
(:mod:`~es_lightning.report.evidence`: both must pass, so a method with no effect passes in at most
``1 − level`` of evaluations also when its seeds spread, as the permuted control's do):

1. ES − base above 0, else ``vacuous: ES did not learn``;
2. ES − the permuted-reward control (``verdicts.permuted_control``: ES's recipe with
   ``--strategy.init_args.reward_control permuted``, the same compute and random walk with the
   rewards shuffled among the members) above 0, else ``vacuous: ES did not beat its
   permuted-reward control``; without that method: ``insufficient data: no permuted control``.

On one seed the premise is ``vacuous: ES's learning is not resolved on one seed``. The premise is a
gate (both tests must pass), not a member of any family.

:func:`learned` asks the same of any method (an ES variant's claims rest on it).
"""

from __future__ import annotations

from es_lightning.report.claims.common import Context, evidence_json
from es_lightning.report.verdicts import VACUOUS, insufficient

ES = "es"


def learned(ctx: Context, method: str, control: str | None = None) -> tuple[str | None, dict]:
    """Why ``method`` cannot be said to have learned (``None``: it beat the base and the
    permuted-reward control at Pass@1), and the evidence that decided it."""
    control = control or ctx.settings.permuted_control
    who = "ES" if method == ES else method
    alpha = 1.0 - ctx.level
    numbers: dict = {}
    if ctx.boot is None:
        return insufficient(f"no per-problem outcomes to check that {method} learned"), numbers
    if not ctx.boot.has(method) or not ctx.boot.has("base"):
        return insufficient(f"no per-problem outcomes of {method} and base"), numbers
    over_base = ctx.boot.difference_evidence(method, "base", 1)
    numbers[f"{method}_minus_base_pass1"] = evidence_json(over_base)
    if over_base is None or over_base.n_seeds < 2:
        return f"vacuous: {who}'s learning is not resolved on one seed", numbers
    if over_base.p_greater() >= alpha:
        return VACUOUS if method == ES else f"vacuous: {method} did not learn", numbers
    if not ctx.boot.has(control):
        return insufficient(f"no permuted control (method {control!r})"), numbers
    over_control = ctx.boot.difference_evidence(method, control, 1)
    numbers[f"{method}_minus_control_pass1"] = evidence_json(over_control)
    if over_control is None or over_control.p_greater() >= alpha:
        return f"vacuous: {who} did not beat its permuted-reward control", numbers
    return None, numbers


def check_premise(ctx: Context) -> None:
    """Set ``ctx.premise`` (``None`` when ES learned) and the numbers it rests on."""
    ctx.premise, numbers = learned(ctx, ES)
    ctx.premise_numbers.update(numbers)
