"""The forgetting setting: what post-training on one skill does to a skill it never trains.

A two-skill model is post-trained on ``in_domain`` only; both tasks are evaluated before and after,
Δ_m(task, K) paired by problem and seed. "Held-out tasks do not collapse" is judged only for a
method whose in-domain Δ is resolved above 0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from es_lightning.report.config import ReportPlan
from es_lightning.report.forgetting_path import collect_forgetting_path
from es_lightning.report.intervals import ProblemBootstrap
from es_lightning.report.outcomes import Outcomes, collect_outcomes, run_outcomes

TAGS = ("before", "after")

Dirs = dict[int, Path]


def collect_forgetting(plan: ReportPlan, runs: dict[str, Dirs]) -> dict[str, Any] | None:
    """The report's ``forgetting`` block from ``{method: {seed: run folder}}`` (``None``: no setting)."""
    settings = plan.forgetting
    if not settings.methods:
        return None
    paths, path_points = collect_forgetting_path(plan, runs)
    outcomes = {}
    for task in (settings.in_domain, settings.out_of_domain):
        found: dict[str, dict[int, Outcomes | None]] = {}
        for method in settings.methods:
            for tag in TAGS:
                dirs = runs.get(method, {})
                found[f"{method}/{tag}"] = {s: run_outcomes(d, tag, task) for s, d in sorted(dirs.items())}
        found.update(path_points.get(task, {}))
        outcomes[task] = collect_outcomes(found, task)
    return {
        "methods": dict(settings.methods),
        "in_domain": settings.in_domain,
        "out_of_domain": settings.out_of_domain,
        "ks": list(settings.ks),
        "margin": settings.margin,
        "outcomes": outcomes,
        "trajectory": paths,
    }


def bootstraps(block: dict[str, Any], level: float, resamples: int, seed: int) -> dict[str, ProblemBootstrap]:
    """One :class:`ProblemBootstrap` per task that has outcomes."""
    return {
        task: ProblemBootstrap(outcomes, level, resamples, seed)
        for task, outcomes in (block.get("outcomes") or {}).items()
        if outcomes and outcomes.get("counts")
    }


def changes(
    block: dict[str, Any], boots: dict[str, ProblemBootstrap]
) -> dict[str, dict[str, dict[str, Any]]]:
    """``{method: {task: {"before@k", "after@k", "delta@k"}}}``: intervals as JSON (absent: ``None``)."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for method in block["methods"]:
        for task in (block["in_domain"], block["out_of_domain"]):
            boot = boots.get(task)
            row: dict[str, Any] = {}
            for k in block["ks"]:
                before, after = f"{method}/before", f"{method}/after"
                ok = boot is not None and boot.has(before, k) and boot.has(after, k)
                row[f"before@{k}"] = _json(boot.pass_at_k(before, k)) if ok else None
                row[f"after@{k}"] = _json(boot.pass_at_k(after, k)) if ok else None
                row[f"delta@{k}"] = _json(boot.difference(after, before, k)) if ok else None
            out.setdefault(method, {})[task] = row
    return out


def _json(interval: Any) -> dict[str, Any] | None:
    return None if interval is None else interval.to_json()
