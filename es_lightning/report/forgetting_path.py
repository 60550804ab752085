"""The forgetting setting's trajectory: a method's checkpoints, each evaluated on both tasks, so
"ES forgets less than GRPO" is read at the same in-domain gain."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from es_lightning.report.config import FORGETTING, ReportPlan
from es_lightning.report.outcomes import Outcomes
from es_lightning.report.readers import run_updates
from es_lightning.report.trajectory import budget, path_records, point_file, point_name, point_outcomes

Dirs = dict[int, Path]


def forgetting_point_file(plan: ReportPlan, method: str, seed: int, step: int) -> Path:
    return point_file(plan, seed, step, f"{FORGETTING}/{method}")


def run_forgetting_path(plan: ReportPlan, runs: dict[str, Dirs], launch: bool) -> list[dict[str, Any]]:
    """Evaluate the path's checkpoints of the finished forgetting runs on both tasks; the records."""
    settings = plan.forgetting.trajectory
    if not settings.enabled or settings.via == "eval_every":
        return []
    tasks = [plan.forgetting.in_domain, plan.forgetting.out_of_domain]
    records = []
    for method in settings.paths:
        records += path_records(plan, settings, runs.get(method, {}), tasks, f"{FORGETTING}/{method}", launch)
    return records


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
