"""GRPO's trajectory: its checkpoints every ``k`` updates, evaluated with the final protocol.

With ``trajectory: {method: grpo, every: k}`` the report adds ``--trainer.checkpoint_every k``
(and ``--trainer.keep_last null``) to that method's runs (``via: eval_every`` adds
``--trainer.eval_every k`` instead: the run evaluates itself every ``k`` updates and keeps no
checkpoints). Each intermediate checkpoint ``step-{t}`` of each seed is then evaluated by
``es-lightning evaluate`` with the run's own task, ``evaluation:`` block, rollout and dtype,
into::

    trajectory/<method>/seed<k>/step-000005.json                 (+ .yaml, .log, _completions.jsonl)

reused when present, like finished runs. Step 0 is the run's ``eval/before`` (the base) and the
last step its ``eval/after``; an in-run ``eval/step-{t}`` evaluation is used when the run has one.
The points enter the report's ``outcomes`` as ``<method>@<t>`` (see
:mod:`~es_lightning.report.matched` for how methods are judged against the path).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

from es_lightning.report.config import ReportPlan, split_overrides
from es_lightning.report.outcomes import Outcomes, completions_file, read_outcomes
from es_lightning.report.readers import pass_at_k, read_json, stages
from es_lightning.report.runs import logged_record


def point_name(method: str, step: int) -> str:
    """The outcomes name of the path point at update ``step`` (``grpo@5``)."""
    return f"{method}@{step}"


def point_file(plan: ReportPlan, seed: int, step: int) -> Path:
    return plan.output_dir / "trajectory" / plan.trajectory.method / f"seed{seed}" / f"step-{step:06d}.json"


def _checkpoints(run_dir: Path, every: int) -> dict[int, Path]:
    """``{step: checkpoint}`` of a single run's checkpoints at multiples of ``every``."""
    root = Path(run_dir) / "checkpoints"
    found = {}
    for path in sorted(root.glob("step-*")):
        try:
            step = int(path.name.split("-", 1)[1])
        except ValueError:
            continue
        if path.is_dir() and step > 0 and step % every == 0 and (path / "trainer_state.json").is_file():
            found[step] = path
    return found


def _task_spec(config: dict[str, Any], task: str) -> Any:
    """How ``es-lightning evaluate`` names the reported task: the run's ``eval_tasks`` entry, the
    training task's spec when it is the one reported, else the name itself."""
    eval_tasks = config.get("eval_tasks")
    if isinstance(eval_tasks, dict) and task in eval_tasks:
        return eval_tasks[task]
    module = config.get("module") or {}
    module = module.get("init_args", module)
    return module.get("task") if eval_tasks is None and module.get("task") else task


def evaluate_config(run_dir: Path, checkpoint: Path, task: str, output: Path) -> dict[str, Any]:
    """The ``es-lightning evaluate`` settings that repeat the run's final evaluation on ``checkpoint``."""
    config = yaml.safe_load((Path(run_dir) / "config.yaml").read_text()) or {}
    module = config.get("module") or {}
    module = module.get("init_args", module)
    accelerator = (config.get("trainer") or {}).get("accelerator", "auto")
    out: dict[str, Any] = {
        "task": _task_spec(config, task),
        "model": str(checkpoint),
        "output": str(output),
        "device": "cpu" if accelerator == "cpu" else "auto",
        "dtype": module.get("dtype", "auto"),
        "trust_remote_code": bool(module.get("trust_remote_code", False)),
    }
    for key in ("evaluation", "rollout"):
        if config.get(key):
            out[key] = config[key]
    if module.get("model_kwargs"):
        out["model_kwargs"] = module["model_kwargs"]
    return out


def run_trajectory(
    plan: ReportPlan, finished: dict[str, dict[int, Path]], task: str | None, launch: bool
) -> list[dict[str, Any]]:
    """Evaluate every intermediate checkpoint of the trajectory method's finished runs (reusing
    evaluations already there); one record per point: name, status, error, log."""
    settings, records = plan.trajectory, []
    if not settings.every or task is None or settings.via == "eval_every":
        return records
    for seed, run_dir in sorted(finished.get(settings.method, {}).items()):
        if len(stages(run_dir)) > 1:
            records.append({"name": f"trajectory/seed{seed}", "status": "failed", "error": "a pipeline"})
            continue
        for step, checkpoint in sorted(_checkpoints(run_dir, settings.every).items()):
            out = point_file(plan, seed, step)
            name = f"trajectory/{settings.method}/seed{seed}/step-{step:06d}"
            if _final_step(run_dir) == step or read_json(out) is not None:
                records.append({"name": name, "status": "reused"})
                continue
            if not launch:
                records.append({"name": name, "status": "missing", "error": "not run (launch: false)"})
                continue
            out.parent.mkdir(parents=True, exist_ok=True)
            recipe = out.with_suffix(".yaml")
            recipe.write_text(
                yaml.safe_dump(evaluate_config(run_dir, checkpoint, task, out), sort_keys=False)
            )
            argv = [sys.executable, "-m", "es_lightning", "evaluate", "--config", str(recipe)]
            print(f"[report] evaluating {name}", flush=True)
            argv = [*argv, *split_overrides(settings.extra_args)]
            records.append(
                logged_record(name, argv, out.with_suffix(".log"), lambda out=out: read_json(out) is not None)
            )
    return records


def _final_step(run_dir: Path) -> int | None:
    """The update of the run's final checkpoint (its ``eval/after`` evaluates it)."""
    try:
        latest = (Path(run_dir) / "checkpoints" / "latest").read_text().strip()
        return int(latest.split("-", 1)[1])
    except (IndexError, ValueError, OSError):
        return None


def point_outcomes(plan: ReportPlan, seed: int, run_dir: Path, step: int, task: str) -> Outcomes | None:
    """The outcomes of path point ``step``: the report's evaluation of the checkpoint, else the
    run's own in-run evaluation ``eval/step-{step}``."""
    out = point_file(plan, seed, step)
    found = read_outcomes(completions_file(out.parent, out.stem, task))
    return found or read_outcomes(completions_file(Path(run_dir) / "eval", f"step-{step:06d}", task))


def point_summary(plan: ReportPlan, seed: int, run_dir: Path, step: int, task: str) -> dict[int, float]:
    data = read_json(point_file(plan, seed, step)) or read_json(
        Path(run_dir) / "eval" / f"step-{step:06d}.json"
    )
    return pass_at_k((data or {}).get(task))


def collect_trajectory(
    plan: ReportPlan, finished: dict[str, dict[int, Path]], task: str | None, updates: int | None
) -> tuple[dict[str, Any] | None, dict[str, dict[int, Outcomes | None]]]:
    """The report's ``trajectory`` block (steps, Pass@K per seed and step) and the path points'
    outcomes ``{point name: {seed: Outcomes}}`` (step 0 and the last step are ``base`` and the
    method itself, already in the report's outcomes). ``updates`` is the method's budget (when
    ``None``, the update of its final checkpoint)."""
    settings = plan.trajectory
    runs = finished.get(settings.method, {})
    if not updates and runs:  # a run sized by epochs: its final checkpoint says how long it was
        updates = max((step for d in runs.values() if (step := _final_step(d)) is not None), default=None)
    if not settings.every or task is None or not runs or not updates:
        return None, {}
    steps = list(range(settings.every, updates, settings.every))
    per_seed: dict[str, dict[str, Any]] = {}
    points: dict[str, dict[int, Outcomes | None]] = {}
    for seed, run_dir in sorted(runs.items()):
        per_seed[str(seed)] = {}
        for step in steps:
            curve = point_summary(plan, seed, run_dir, step, task)
            if curve:
                per_seed[str(seed)][str(step)] = {str(k): v for k, v in curve.items()}
            points.setdefault(point_name(settings.method, step), {})[seed] = point_outcomes(
                plan, seed, run_dir, step, task
            )
    return {
        "method": settings.method,
        "every": settings.every,
        "steps": [0, *steps, updates],
        "points": ["base", *(point_name(settings.method, s) for s in steps), settings.method],
        "per_seed": per_seed,
    }, points
