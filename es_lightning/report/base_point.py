"""The sparsity curve's base point for an analysis whose run's weights were not kept.

The checkpoint does not enter the base point (θ_0 on the curve's engine), so when the run's
checkpoints are gone it is scored by ``es-lightning evaluate --model <base>`` with the analysis's
settings, once per base and task, where those settings allow it; otherwise the record says why.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from es_lightning.report.config import ReportPlan, split_overrides
from es_lightning.report.readers import read_json
from es_lightning.report.runs import logged_record

PASSED = ("--evaluation", "--rollout", "--device", "--dtype")
"""``drift.extra_args`` flags that ``es-lightning evaluate`` takes with the same meaning."""
LEFT_OUT = ("--taus", "--top_k", "--threshold_view", "--keep_exports", "--export_dir", "--progress")
"""``drift.extra_args`` flags of analyze alone, which leave the base's samples as they are."""


def evaluate_args(extra_args: list[str]) -> list[str] | str:
    """The ``evaluate`` arguments of ``drift.extra_args``, or why the base cannot be scored apart."""
    tokens, passed, keep = split_overrides(extra_args), [], False
    for token in tokens:
        if token.startswith("--"):
            flag = token.split("=", 1)[0]
            if flag.startswith(PASSED):
                keep = True
            elif flag.startswith(LEFT_OUT):
                keep = False
            else:
                return f"drift.extra_args has {flag}, which es-lightning evaluate does not take alike"
        if keep:
            passed.append(token)
    return passed


def serving_dtype(analysis: dict[str, Any], path: Path) -> str | None:
    """The one dtype the analysis's exports were served in, or ``None``."""
    records = [r for r in analysis.get("thresholded") or [] if isinstance(r, dict)]
    found = {r["serving_dtype"] for r in records if r.get("serving_dtype")}
    for folder in path.with_name(f"{path.stem}_thresholded").glob("thresholded-*"):
        record = read_json(folder / "thresholded.json")
        if isinstance(record, dict) and record.get("serving_dtype"):
            found.add(record["serving_dtype"])
    return found.pop() if len(found) == 1 else None


def base_point(
    analysis: dict[str, Any], summary: dict[str, Any], served: str, scored_by: str
) -> dict[str, Any]:
    """The ``sparsity_curve_base`` record analyze writes, with the evaluation's ``summary``."""
    view = analysis.get("view", "stored")
    numbers = analysis if view == "stored" else analysis.get(view) or {}
    nonzero = numbers.get("nonzero", analysis.get("nonzero"))
    point = {"tau": None, "base": True, "folder": analysis["base"], "view": view}
    point |= {"numel": numbers.get("numel", analysis.get("numel")), "nonzero": nonzero, "kept": 0}
    point |= {"reverted": nonzero, "s_tau": 1.0, "served_dtype": served}
    return {**point, **summary, "scored_by": scored_by}


def cannot_score_alone(plan: ReportPlan, analysis: dict[str, Any], path: Path) -> str | None:
    """Why the analysis's base point cannot be scored without its checkpoint, or ``None``."""
    if not analysis.get("base"):
        return "the analysis names no base model"
    passed = evaluate_args(plan.drift.extra_args)
    if isinstance(passed, str):
        return passed
    stored = (str(analysis.get("base_stored_as") or "").split() or [None])[0]  # "float32 model.safetensors"
    dtype = serving_dtype(analysis, path)
    if dtype is None or dtype != stored:
        return f"its exports were served as {dtype}, the base is stored as {stored}"
    return None


def _score(plan: ReportPlan, name: str, base: str, scored: Path, launch: bool) -> dict[str, Any] | None:
    """Evaluate the base into ``scored`` unless there; ``None`` on success, else the record."""
    if isinstance(read_json(scored), dict):
        return None
    if not launch:
        return {"name": name, "status": "missing", "error": "not run (its base point)"}
    passed = evaluate_args(plan.drift.extra_args)
    assert isinstance(passed, list)  # checked by cannot_score_alone
    argv = [sys.executable, "-m", "es_lightning", "evaluate", "--model", base]
    argv += ["--task", str(plan.drift.evaluate), "--output", str(scored), *passed]
    print(f"[report] scoring the base point of {name} ({base} on {plan.drift.evaluate})", flush=True)
    scored.parent.mkdir(parents=True, exist_ok=True)
    record = logged_record(
        name, argv, scored.with_suffix(".log"), lambda: isinstance(read_json(scored), dict)
    )
    return None if record["status"] == "finished" else record


def add_base_point(plan: ReportPlan, name: str, path: Path, analysis: dict[str, Any], launch: bool) -> dict:
    """Score the base of the analysis at ``path`` and write its ``sparsity_curve_base``; the record."""
    why = cannot_score_alone(plan, analysis, path)
    if why is not None:
        error = f"no checkpoint in the run, and the base point cannot be scored alone: {why}"
        return {"name": name, "status": "failed", "error": error}
    base = str(analysis["base"])
    stem = f"{base.strip('/').replace('/', '--')}__{plan.drift.evaluate}"  # one per base and task
    scored = plan.analysis_dir / "base_point" / f"{stem}.json"
    failed = _score(plan, name, base, scored, launch)
    if failed is not None:
        return failed
    summaries = {k: v for k, v in read_json(scored).items() if k != "average"}
    if len(summaries) != 1:
        error = f"{scored}: one task expected, found {sorted(summaries)}"
        return {"name": name, "status": "failed", "error": error}
    scored_by = f"es-lightning evaluate --model {base} (a fresh engine: the run's checkpoint was not kept)"
    served = str(serving_dtype(analysis, path))
    analysis["sparsity_curve_base"] = base_point(analysis, next(iter(summaries.values())), served, scored_by)
    completions = scored.with_name(f"{scored.stem}_completions.jsonl")
    if completions.is_file():  # where analyze keeps the base's samples
        target = path.with_name(f"{path.stem}_thresholded") / "completions" / "completions-base.jsonl"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(completions, target)
    path.write_text(json.dumps(analysis, indent=2))
    return {"name": name, "status": "finished", "note": "base point only (the run's checkpoint was not kept)"}
