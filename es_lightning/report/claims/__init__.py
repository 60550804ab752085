"""The honest reading: each of the paper's claims, the number measured here, and a verdict.

:func:`judge` recomputes every interval and verdict from the report's data blocks (so a saved
``report.json`` is judged again by ``--from_json``): the paired bootstrap over problems of the
per-problem ``outcomes`` (:mod:`~es_lightning.report.intervals`), ES's premise
(:mod:`.premise`), then the claim families, each in its module: Pass@K and coverage
(:mod:`.coverage`), the sequential runs on GRPO's trajectory (:mod:`.sequential`), the ES
variants (:mod:`.variants`), drift
(:mod:`.drift`), entropy (:mod:`.training`), the forgetting setting (:mod:`.forgetting`) and
the ablations (:mod:`.ablations`). The rules are
those of :mod:`~es_lightning.report.verdicts`: each claim's two tests, Holm's adjustment within
each family of claims (:func:`~es_lightning.report.verdicts.apply_holm`), then the verdict.
"""

from __future__ import annotations

from typing import Any

from es_lightning.report.claims.ablations import ablation_claims
from es_lightning.report.claims.common import Context, evidence_json, interval_json, verdict_settings
from es_lightning.report.claims.coverage import coverage_claims
from es_lightning.report.claims.drift import drift_claims
from es_lightning.report.claims.forgetting import forgetting_claims
from es_lightning.report.claims.gain_split import gain_split
from es_lightning.report.claims.premise import check_premise
from es_lightning.report.claims.sequential import sequential_claims
from es_lightning.report.claims.training import entropy_claims
from es_lightning.report.claims.variants import variant_claims
from es_lightning.report.intervals import ProblemBootstrap
from es_lightning.report.preregistration import check
from es_lightning.report.verdicts import apply_holm

FAMILIES = {
    "primary": "the primary claim (ES above GRPO's path at matched Pass@1, K = verdicts.primary_k)",
    "coverage": "ES's other coverage claims (other K, other paths, the temperature path, Pass@K against its control)",
    "grpo": "GRPO's claims (Pass@1 up, Pass@K down, entropy down, attribution)",
    "es_mechanism": "ES's mechanism (drift, sparsity, attribution, functional sparsity, entropy)",
    "forgetting": "the forgetting setting",
    "sequential": "the sequential runs against GRPO's trajectory",
    "variants": "the ES variants (es_variants)",
}
"""The families of claims Holm's adjustment runs within."""


def _bootstrap(report: dict[str, Any], settings: Any) -> ProblemBootstrap | None:
    outcomes = report.get("outcomes")
    if not outcomes or not outcomes.get("counts"):
        return None
    return ProblemBootstrap(outcomes, settings.level, settings.bootstrap_resamples, settings.bootstrap_seed)


def _intervals(report: dict[str, Any], boot: ProblemBootstrap | None) -> dict[str, Any]:
    """Pass@K of every method and its difference to base at K = 1 and the Pareto K's."""
    if boot is None:
        return {}
    config = report["config"]
    ks = sorted({1, *config["pareto_ks"], *config["ks"]} & set(range(1, boot.m + 1)))
    methods = [m for m in boot.counts if "@" not in m]  # the trajectory's points (grpo@5) have no Δ row
    return {
        "ks": ks,
        "pass_at_k": {m: {str(k): interval_json(boot.pass_at_k(m, k)) for k in ks} for m in boot.counts},
        "difference_to_base": {
            m: {str(k): evidence_json(boot.difference_evidence(m, "base", k)) for k in ks}
            for m in methods
            if m != "base" and boot.has("base")
        },
    }


def judge(report: dict[str, Any]) -> dict[str, Any]:
    """``{"intervals", "premise", "claims"}`` of ``report`` (its config, outcomes, trajectory,
    curves, drift, forgetting and ablations; any of them may be absent), and ``forgetting`` with
    its before/after changes when the report has that setting."""
    settings = verdict_settings(report["config"])
    boot = _bootstrap(report, settings)
    pareto_ks = [int(k) for k in report["config"].get("pareto_ks", [])]
    big_k = max((k for k in pareto_ks if boot is None or k <= boot.m), default=None)
    ctx = Context(report, settings, boot, big_k)
    check_premise(ctx)
    forgetting, forgetting_block = forgetting_claims(ctx)
    claims = [
        *coverage_claims(ctx),
        *sequential_claims(ctx),
        *variant_claims(ctx),
        *drift_claims(ctx),
        *entropy_claims(ctx),
        *forgetting,
        *ablation_claims(ctx),
    ]
    apply_holm(claims, settings.level)
    premise = {"verdict": ctx.premise or "ES learned", "numbers": ctx.premise_numbers}
    judged = {
        "intervals": _intervals(report, boot),
        "premise": premise,
        "claims": claims,
        "families": _families(claims),
        "gain_split": gain_split(report, boot),
        "preregistration": check(report["config"].get("verdicts") or {}, settings.preregistration),
    }
    return judged if forgetting_block is None else {**judged, "forgetting": forgetting_block}


def _families(claims: list[dict[str, Any]]) -> dict[str, Any]:
    """Each family's description and how many of its claims were tested (Holm's m)."""
    counts: dict[str, int] = {}
    for c in claims:
        if c.get("test"):
            counts[c["test"]["family"]] = counts.get(c["test"]["family"], 0) + 1
    return {name: {"what": what, "tested": counts.get(name, 0)} for name, what in FAMILIES.items()}


def build_claims(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Every claim with its measured number and verdict."""
    return judge(report)["claims"]


__all__ = ["build_claims", "judge"]
