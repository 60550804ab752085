"""Reading finished run folders: evaluations, metric series, the final checkpoint, the config; a
pipeline's stages are joined end to end."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

Series = list[tuple[int, float]]
"""``[(step, value), ...]`` in step order."""

_PASS = re.compile(r"^pass@(\d+)$")


def read_json(path: Path) -> Any | None:
    """The parsed file, or ``None`` when it is absent or not valid JSON."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def stages(run_dir: Path) -> list[tuple[Path, int]]:
    """``[(stage folder, updates), ...]``; a single run is one stage of unknown length (0)."""
    plan = read_json(Path(run_dir) / "pipeline.json")
    if not isinstance(plan, dict) or not plan.get("stages"):
        return [(Path(run_dir), 0)]
    out = []
    for i, stage in enumerate(plan["stages"]):
        local = Path(run_dir) / f"stage{i + 1}_{stage['name']}"
        recorded = Path(stage.get("output_dir", local))
        out.append((local if local.is_dir() or not recorded.is_dir() else recorded, int(stage["updates"])))
    return out


def final_eval_file(run_dir: Path) -> Path:
    """The evaluation written last: ``eval/after.json`` of the run (of its last stage)."""
    return stages(run_dir)[-1][0] / "eval" / "after.json"


def is_finished(run_dir: Path) -> bool:
    """A run counts as finished (and is reused) when its final evaluation exists."""
    return read_json(final_eval_file(run_dir)) is not None


def read_before(run_dir: Path) -> dict[str, Any] | None:
    """The starting model's evaluation (``eval/before.json`` of the first stage)."""
    return read_json(stages(run_dir)[0][0] / "eval" / "before.json")


def read_after(run_dir: Path) -> dict[str, Any] | None:
    """The final evaluation (``eval/after.json`` of the last stage)."""
    return read_json(final_eval_file(run_dir))


def pick_task(evaluation: dict[str, Any], task: str | None) -> str | None:
    """``task`` if the evaluation has it; by default its first task other than ``average``."""
    if task is not None:
        return task if task in evaluation else None
    names = [name for name in evaluation if name != "average"]
    return names[0] if names else ("average" if "average" in evaluation else None)


def pass_at_k(summary: dict[str, Any] | None) -> dict[int, float]:
    """``{k: pass@k}`` of one task's summary (empty for ``None``)."""
    out = {}
    for key, value in (summary or {}).items():
        match = _PASS.match(key)
        if match and isinstance(value, int | float):
            out[int(match.group(1))] = float(value)
    return dict(sorted(out.items()))


def read_series(run_dir: Path) -> dict[str, Series]:
    """Every metric of ``metrics.jsonl`` as a series (pipelines joined, non-finite values dropped)."""
    values: dict[str, dict[int, float]] = {}
    offset = 0
    for stage_dir, updates in stages(run_dir):
        path = stage_dir / "metrics.jsonl"
        lines = path.read_text().splitlines() if path.is_file() else []
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a line cut short by a killed run
            step = record.get("step")
            if not isinstance(step, int):
                continue
            for key, value in record.items():
                if key != "step" and isinstance(value, int | float) and math.isfinite(value):
                    values.setdefault(key, {})[offset + step] = float(value)
        offset += updates
    return {key: sorted(steps.items()) for key, steps in values.items()}


def final_checkpoint(run_dir: Path) -> Path | None:
    """The newest complete checkpoint of the run (of its last stage), or ``None``."""
    from es_lightning.checkpoint_space import pointed_checkpoint

    return pointed_checkpoint(stages(run_dir)[-1][0] / "checkpoints")


def run_config(run_dir: Path) -> dict[str, Any] | None:
    """The run's resolved ``config.yaml``, or ``None`` when it is absent or not a YAML mapping."""
    import yaml

    try:
        config = yaml.safe_load((Path(run_dir) / "config.yaml").read_text())
    except (OSError, yaml.YAMLError):
        return None
    return config if isinstance(config, dict) else None


def module_args(config: dict[str, Any]) -> dict[str, Any]:
    """The ``module`` section's arguments (its ``init_args`` where the CLI wrote class_path/init_args)."""
    module = config.get("module")
    found = module.get("init_args", module) if isinstance(module, dict) else None
    return found if isinstance(found, dict) else {}


def starting_model(run_dir: Path) -> str | None:
    """``module.model`` of the run's resolved ``config.yaml`` (the model training started from)."""
    model = module_args(run_config(run_dir) or {}).get("model")
    return str(model) if model else None


def run_updates(run_dir: Path) -> int | None:
    """Updates the run was given (``None`` when its config does not say)."""
    plan = stages(run_dir)
    if plan[0][1]:
        return sum(updates for _, updates in plan)
    try:
        steps = (run_config(run_dir) or {})["trainer"]["max_steps"]
    except (KeyError, TypeError):
        return None
    return int(steps) if isinstance(steps, int) else None
