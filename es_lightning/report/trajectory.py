"""GRPO's trajectory: its checkpoints at chosen updates, evaluated with the final protocol and
entering ``outcomes`` as ``<method>@<t>`` (:mod:`~es_lightning.report.matched` judges against it).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from es_lightning.report.config import ReportPlan, TrajectorySettings, split_overrides
from es_lightning.report.outcomes import Outcomes, evaluation_outcomes
from es_lightning.report.readers import module_args, pass_at_k, read_json, stages
from es_lightning.report.runs import logged_record


def point_name(method: str, step: int) -> str:
    """The outcomes name of the path point at update ``step`` (``grpo@5``)."""
    return f"{method}@{step}"


def point_file(plan: ReportPlan, seed: int, step: int, method: str | None = None) -> Path:
    """Where the report's evaluation of ``method``'s (default: the primary path's) checkpoint goes
    (``forgetting/<method>``: the forgetting setting's)."""
    method = method or plan.trajectory.primary
    return plan.output_dir / "trajectory" / method / f"seed{seed}" / f"step-{step:06d}.json"


def checkpoints_at(run_dir: Path, wanted: Callable[[int], bool]) -> dict[int, Path]:
    """``{step: checkpoint}`` of a single run's complete checkpoints at the updates ``wanted``."""
    root = Path(run_dir) / "checkpoints"
    found = {}
    for path in sorted(root.glob("step-*")):
        try:
            step = int(path.name.split("-", 1)[1])
        except ValueError:
            continue
        if path.is_dir() and step > 0 and wanted(step) and (path / "trainer_state.json").is_file():
            found[step] = path
    return found


def _task_spec(config: dict[str, Any], task: str) -> Any:
    """How ``evaluate`` names the reported task (the run's own spec where it has one)."""
    eval_tasks = config.get("eval_tasks")
    if isinstance(eval_tasks, dict) and task in eval_tasks:
        return eval_tasks[task]
    module = module_args(config)
    return module.get("task") if eval_tasks is None and module.get("task") else task


def evaluate_config(run_dir: Path, checkpoint: Path, task: str | list[str], output: Path) -> dict[str, Any]:
    """The ``evaluate`` settings that repeat the run's final evaluation on ``checkpoint``."""
    config = yaml.safe_load((Path(run_dir) / "config.yaml").read_text()) or {}
    module = module_args(config)
    accelerator = (config.get("trainer") or {}).get("accelerator", "auto")
    spec = [_task_spec(config, t) for t in task] if isinstance(task, list) else _task_spec(config, task)
    out: dict[str, Any] = {
        "task": spec,
        "model": str(checkpoint),
        "output": str(output),
        "device": "cpu" if accelerator == "cpu" else "auto",
        "dtype": module.get("dtype", "auto"),
        "trust_remote_code": bool(module.get("trust_remote_code", False)),
    }
    out.update({key: config[key] for key in ("evaluation", "rollout") if config.get(key)})
    if module.get("model_kwargs"):
        out["model_kwargs"] = module["model_kwargs"]
    return out


def evaluate_point(
    name: str, config: dict[str, Any], out: Path, extra_args: list[str], launch: bool
) -> dict[str, Any]:
    """``evaluate`` with ``config`` into ``out`` unless it is there; the report's record."""
    if read_json(out) is not None:
        return {"name": name, "status": "reused"}
    if not launch:
        return {"name": name, "status": "missing", "error": "not run (launch: false)"}
    out.parent.mkdir(parents=True, exist_ok=True)
    recipe = out.with_suffix(".yaml")
    recipe.write_text(yaml.safe_dump(config, sort_keys=False))
    argv = [sys.executable, "-m", "es_lightning", "evaluate", "--config", str(recipe)]
    print(f"[report] evaluating {name}", flush=True)
    argv = [*argv, *split_overrides(extra_args)]
    return logged_record(name, argv, out.with_suffix(".log"), lambda: read_json(out) is not None)


def path_records(
    plan: ReportPlan,
    settings: TrajectorySettings,
    finished: dict[str, dict[int, Path]],
    task: str | list[str],
    launch: bool,
    group: str | None = None,
) -> list[dict[str, Any]]:
    """Evaluate the path's checkpoints of every seed's run of each path method (``<group>/<method>``
    in a setting's run group, e.g. the forgetting setting's) into :func:`point_file`; one record
    per point."""
    if not settings.enabled or settings.via == "eval_every":
        return []
    records = []
    for path in settings.paths:
        method = f"{group}/{path}" if group else path
        for seed, run_dir in sorted(finished.get(path, {}).items()):
            if len(stages(run_dir)) > 1:
                records.append(
                    {"name": f"trajectory/{method}/seed{seed}", "status": "failed", "error": "a pipeline"}
                )
                continue
            for step, checkpoint in sorted(checkpoints_at(run_dir, settings.wants).items()):
                out = point_file(plan, seed, step, method)
                name = f"trajectory/{method}/seed{seed}/step-{step:06d}"
                if final_step(run_dir) == step:
                    records.append({"name": name, "status": "reused"})
                    continue
                config = evaluate_config(run_dir, checkpoint, task, out)
                records.append(evaluate_point(name, config, out, settings.extra_args, launch))
    return records


def run_trajectory(
    plan: ReportPlan, finished: dict[str, dict[int, Path]], task: str | None, launch: bool
) -> list[dict[str, Any]]:
    """Evaluate every intermediate checkpoint of the path methods' finished runs; the records."""
    return [] if task is None else path_records(plan, plan.trajectory, finished, task, launch)


def final_step(run_dir: Path) -> int | None:
    """The update of the run's final checkpoint (its ``eval/after`` evaluates it)."""
    try:
        latest = (Path(run_dir) / "checkpoints" / "latest").read_text().strip()
        return int(latest.split("-", 1)[1])
    except (IndexError, ValueError, OSError):
        return None


def point_outcomes(out: Path, run_dir: Path, step: int, task: str) -> Outcomes | None:
    """A path point's outcomes: the report's evaluation ``out``, else the run's ``eval/step-{step}``."""
    found = evaluation_outcomes(out.parent, out.stem, task)
    return found or evaluation_outcomes(Path(run_dir) / "eval", f"step-{step:06d}", task)


def budget(runs: dict[int, Path], updates: int | None) -> int | None:
    """The method's budget: ``updates``, else (a run sized by epochs) its final checkpoint's update."""
    if not updates and runs:
        updates = max((step for d in runs.values() if (step := final_step(d)) is not None), default=None)
    return updates


def collect_path(
    plan: ReportPlan, method: str, runs: dict[int, Path], task: str, updates: int
) -> tuple[dict[str, Any], dict[str, dict[int, Outcomes | None]]]:
    """One path's ``{"steps", "points", "per_seed"}`` and its points' outcomes."""
    steps = plan.trajectory.points(updates)
    per_seed: dict[str, dict[str, Any]] = {}
    points: dict[str, dict[int, Outcomes | None]] = {}
    for seed, run_dir in sorted(runs.items()):
        per_seed[str(seed)] = {}
        for step in steps:
            out = point_file(plan, seed, step, method)
            data = read_json(out) or read_json(Path(run_dir) / "eval" / f"step-{step:06d}.json")
            curve = pass_at_k((data or {}).get(task))
            if curve:
                per_seed[str(seed)][str(step)] = {str(k): v for k, v in curve.items()}
            points.setdefault(point_name(method, step), {})[seed] = point_outcomes(out, run_dir, step, task)
    block = {
        "steps": [0, *steps, updates],
        "points": ["base", *(point_name(method, s) for s in steps), method],
        "per_seed": per_seed,
    }
    return block, points


def collect_trajectory(
    plan: ReportPlan,
    finished: dict[str, dict[int, Path]],
    task: str | None,
    budgets: dict[str, int | None] | None = None,
) -> tuple[dict[str, Any] | None, dict[str, dict[int, Outcomes | None]]]:
    """The report's ``trajectory`` block (``None`` without one) and the path points' outcomes."""
    settings = plan.trajectory
    if not settings.enabled or task is None:
        return None, {}
    paths: dict[str, dict[str, Any]] = {}
    points: dict[str, dict[int, Outcomes | None]] = {}
    for method in settings.paths:
        runs = finished.get(method, {})
        updates = budget(runs, (budgets or {}).get(method))
        if not runs or not updates:
            continue
        paths[method], found = collect_path(plan, method, runs, task, updates)
        points.update(found)
    primary = paths.get(settings.primary)
    if primary is None:
        return None, points
    head = {"method": settings.primary, "every": settings.every, "at_steps": sorted(settings.steps)}
    return {**head, **primary, "paths": paths}, points
