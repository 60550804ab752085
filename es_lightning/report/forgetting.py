"""The forgetting setting: what post-training on one skill does to a skill it never trains.

A two-skill model is post-trained on ``in_domain`` only; both tasks are evaluated before and after,
Δ_m(task, K) paired by problem and seed. "Held-out tasks do not collapse" is judged only for a
method whose in-domain Δ is resolved above 0. A method's path (its checkpoints, each evaluated on
both tasks) lets "ES forgets less than GRPO" be read at the same in-domain gain.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from es_lightning.report.config import FORGETTING, ReportPlan
from es_lightning.report.intervals import ProblemBootstrap
from es_lightning.report.outcomes import Outcomes, collect_outcomes, run_outcomes
from es_lightning.report.readers import run_updates
from es_lightning.report.trajectory import budget, path_records, point_file, point_name, point_outcomes

TAGS = ("before", "after")

Dirs = dict[int, Path]


def forgetting_point_file(plan: ReportPlan, method: str, seed: int, step: int) -> Path:
    return point_file(plan, seed, step, f"{FORGETTING}/{method}")


def run_forgetting_path(plan: ReportPlan, runs: dict[str, Dirs], launch: bool) -> list[dict[str, Any]]:
    """Evaluate the path's checkpoints of the finished forgetting runs on both tasks; the records."""
    tasks = [plan.forgetting.in_domain, plan.forgetting.out_of_domain]
    return path_records(plan, plan.forgetting.trajectory, runs, tasks, launch, FORGETTING)


def collect_forgetting_path(
    plan: ReportPlan, runs: dict[str, Dirs]
) -> tuple[dict[str, Any] | None, dict[str, dict[str, dict[int, Outcomes | None]]]]:
    """The forgetting block's ``trajectory`` and the points' outcomes per task."""
    settings = plan.forgetting.trajectory
    if not settings.enabled:
        return None, {}
    tasks = (plan.forgetting.in_domain, plan.forgetting.out_of_domain)
    paths: dict[str, Any] = {}
    points: dict[str, dict[str, dict[int, Outcomes | None]]] = {task: {} for task in tasks}
    for method in settings.paths:
        dirs = runs.get(method, {})
        updates = budget(dirs, run_updates(next(iter(dirs.values())))) if dirs else None
        if not updates:
            continue
        steps = settings.points(updates)
        names = [point_name(method, step) for step in steps]
        paths[method] = {
            "steps": [0, *steps, updates],
            "points": [f"{method}/before", *names, f"{method}/after"],
        }
        for task in tasks:
            for step, name in zip(steps, names):
                points[task][name] = {
                    seed: point_outcomes(forgetting_point_file(plan, method, seed, step), run_dir, step, task)
                    for seed, run_dir in sorted(dirs.items())
                }
    return paths or None, points


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
