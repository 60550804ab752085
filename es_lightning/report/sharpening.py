"""The sharpening reference: the base model sampled at lower temperatures, evaluated like the runs;
a method on that path has done no more than sharpen."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from es_lightning.report.config import ReportPlan
from es_lightning.report.outcomes import Outcomes, evaluation_outcomes
from es_lightning.report.readers import pass_at_k, read_json, run_config, stages, starting_model
from es_lightning.report.trajectory import evaluate_config, evaluate_point

BASE = "base"


def point_name(temperature: float) -> str:
    """The outcomes name of the base sampled at ``temperature`` (``base@T0.4``)."""
    return f"{BASE}@T{temperature:g}"


def sharpening_file(plan: ReportPlan, temperature: float) -> Path:
    return plan.output_dir / "sharpening" / f"T{temperature:g}.json"


def protocol_run(plan: ReportPlan, finished: dict[str, dict[int, Path]]) -> Path | None:
    """The run whose final protocol the base is evaluated with: the first finished single run."""
    for method in plan.methods:
        for _, run_dir in sorted(finished.get(method, {}).items()):
            if len(stages(run_dir)) == 1 and (Path(run_dir) / "config.yaml").is_file():
                return Path(run_dir)
    return None


def protocol_temperature(run_dir: Path) -> float | None:
    """The sampling temperature of the run's evaluation (``None`` when its config does not say)."""
    value = ((run_config(run_dir) or {}).get("evaluation") or {}).get("temperature")
    return float(value) if isinstance(value, int | float) else None


def run_sharpening(
    plan: ReportPlan, finished: dict[str, dict[int, Path]], task: str | None, launch: bool
) -> list[dict[str, Any]]:
    """Evaluate the base at each temperature but the protocol's; one record per temperature."""
    temperatures = plan.sharpening.temperatures
    run = protocol_run(plan, finished) if temperatures and task is not None else None
    model = starting_model(run) if run is not None else None
    if run is None or model is None or task is None:
        return []
    records = []
    for temperature in temperatures:
        if temperature == protocol_temperature(run):
            continue
        out = sharpening_file(plan, temperature)
        config = evaluate_config(run, Path(model), task, out)
        config["model"] = model  # a built-in name or folder, as the run was given it
        evaluation = config.get("evaluation") or {}
        config["evaluation"] = {**evaluation, "temperature": temperature, "greedy": False}
        name = f"sharpening/T{temperature:g}"
        records.append(evaluate_point(name, config, out, plan.sharpening.extra_args, launch))
    return records


def collect_sharpening(
    plan: ReportPlan, finished: dict[str, dict[int, Path]], task: str | None
) -> tuple[dict[str, Any] | None, dict[str, dict[int, Outcomes | None]]]:
    """The report's ``sharpening`` block and the points' outcomes (``None`` when there is none)."""
    temperatures = sorted(plan.sharpening.temperatures, reverse=True)
    run = protocol_run(plan, finished) if temperatures and task is not None else None
    if run is None or task is None:
        return None, {}
    protocol = protocol_temperature(run)
    names: list[str] = []
    curves: dict[str, dict[str, float]] = {}
    points: dict[str, dict[int, Outcomes | None]] = {}
    for temperature in temperatures:
        if temperature == protocol:
            names.append(BASE)
            continue
        name, out = point_name(temperature), sharpening_file(plan, temperature)
        names.append(name)
        curve = pass_at_k((read_json(out) or {}).get(task))
        if curve:
            curves[name] = {str(k): v for k, v in curve.items()}
        found = evaluation_outcomes(out.parent, out.stem, task)
        points[name] = {seed: found for seed in plan.seeds}
    block = {
        "temperatures": temperatures,
        "points": names,
        "protocol_temperature": protocol,
        "protocol_run": run.relative_to(plan.output_dir).as_posix()
        if run.is_relative_to(plan.output_dir)
        else str(run),
        "pass_at_k": curves,
    }
    return block, points
