"""The forgetting claims: ES's held-out skill does not collapse, and ES forgets less than GRPO.

From the report's ``forgetting`` block (:mod:`~es_lightning.report.forgetting`). A run that
learned nothing forgets nothing, and a random walk of ES's step size may forget a little by itself,
so both claims rest on ES's premise in this setting, judged like the main one (seed t and
two-level bootstrap, :mod:`~es_lightning.report.evidence`) on the trained task's Pass@1: ES after −
ES before above 0, and ES after − its permuted-reward control after (``verdicts.permuted_control``
run in the forgetting setting) above 0. Then, in the ``forgetting`` family (Holm):

- "ES's held-out skill does not collapse": held-out Pass@1 of ES after − the control after, not
  below −``margin`` (non-inferiority; the control took the same walk without the rewards);
- "ES forgets less than GRPO at the same in-domain gain": ES's held-out Pass@1 minus GRPO's where
  GRPO was as accurate on the trained task (GRPO's checkpoints on both tasks, ``grpo@<step>``:
  in-domain Pass@1 against held-out Pass@1, :func:`~es_lightning.report.matched.matched_evidence`)
  above 0. Comparing end points would set ES's small gain against GRPO's large one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from es_lightning.report.claims.common import PCT, Context, claim, evidence_json, fmt_interval, points, tested
from es_lightning.report.forgetting import bootstraps, changes
from es_lightning.report.matched import matched_evidence
from es_lightning.report.verdicts import ONE_SEED, insufficient

ES = "es"


def forgetting_claims(ctx: Context) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """``(claims, block with "changes")``; the block is ``None`` when the report has no setting."""
    block = ctx.report.get("forgetting")
    names = ("ES's held-out skill does not collapse", "ES forgets less than GRPO at the same in-domain gain")
    if not block:
        return [
            claim(n, "held-out tasks keep their accuracy", "–", insufficient("no forgetting setting"), "–")
            for n in names
        ], None
    s = ctx.settings
    boots = bootstraps(block, s.level, s.bootstrap_resamples, s.bootstrap_seed)
    block = {**block, "changes": changes(block, boots)}
    ind, ood = block["in_domain"], block["out_of_domain"]
    inside, outside = boots.get(ind), boots.get(ood)
    control = s.permuted_control
    gate = _premise(ctx, inside, control)
    margin = float(block["margin"])

    kept = (
        outside.difference_evidence(f"{ES}/after", f"{control}/after", 1)
        if outside and outside.has(f"{control}/after")
        else None
    )
    text = (
        f"held-out ({ood}) Pass@1, es − {control} after (points) = {fmt_interval(evidence_json(kept), **PCT)}"
    )
    rule = f"ES learned {ind} (over before and over its control), then non-inferiority: lower bound > −{points(margin)} (seed t and two-level bootstrap, Holm)"
    base = claim(
        names[0],
        "held-out tasks keep their accuracy despite ES's large drift",
        text,
        "",
        rule,
        kept=evidence_json(kept),
    )
    out = [
        {**base, "verdict": gate}
        if gate
        else tested(base, "forgetting", kept, kept.p_greater(-margin), kept.p_less(-margin), ctx.level)
    ]

    matched, why = _versus_grpo(block, inside, outside)
    text = f"held-out Pass@1 of es − GRPO's at es's in-domain Pass@1 (points) = {fmt_interval(evidence_json(matched), **PCT)}"
    rule = "ES learned, then against GRPO's checkpoints on both tasks at matched in-domain Pass@1: > 0 (Holm)"
    base = claim(names[1], "GRPO forgets, ES does not", text, "", rule, matched=evidence_json(matched))
    gate = gate or why
    out.append(
        {**base, "verdict": gate}
        if gate
        else tested(base, "forgetting", matched, matched.p_greater(), matched.p_less(), ctx.level)
    )
    return out, block


def _premise(ctx: Context, boot: Any, control: str) -> str | None:
    """Why ES's forgetting claims cannot be judged (``None``: ES learned its training task)."""
    alpha = 1.0 - ctx.level
    if boot is None or not boot.has(f"{ES}/after"):
        return insufficient("no per-problem outcomes of es in the forgetting setting")
    if not boot.has(f"{control}/after"):
        return insufficient(f"no permuted control ({control!r}) in the forgetting setting")
    if not boot.has(f"{ES}/before"):
        return insufficient("no per-problem outcomes of es before training in the forgetting setting")
    over_before = boot.difference_evidence(f"{ES}/after", f"{ES}/before", 1)
    over_control = boot.difference_evidence(f"{ES}/after", f"{control}/after", 1)
    if over_before is None or over_control is None or over_before.n_seeds < 2:
        return ONE_SEED
    if over_before.p_greater() >= alpha:
        return "vacuous: ES did not learn its training task"
    if over_control.p_greater() >= alpha:
        return "vacuous: ES did not beat its permuted-reward control on its training task"
    return None


def _versus_grpo(block: dict[str, Any], inside: Any, outside: Any) -> tuple[Any, str | None]:
    trajectory = block.get("trajectory") or {}
    method = trajectory.get("method", "grpo")
    path = [f"{method}/before", *trajectory.get("points", []), f"{method}/after"]
    if not trajectory.get("points"):
        return None, insufficient("no GRPO checkpoints evaluated in the forgetting setting")
    names = [*path, f"{ES}/after"]
    if inside is None or outside is None or not all(b.has(n) for b in (inside, outside) for n in names):
        return None, insufficient("GRPO's forgetting checkpoints lack outcomes on a task")
    seeds = sorted(set(inside.seeds(*names)) & set(outside.seeds(*names)))
    if not seeds:
        return None, insufficient("no seed shared by es and GRPO's checkpoints")
    xv = np.stack([inside.values(n, 1, seeds) for n in names])
    yv = np.stack([outside.values(n, 1, seeds) for n in names])
    evidence, _ = matched_evidence((inside, xv), (outside, yv))
    return evidence, None
