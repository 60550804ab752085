"""What a run writes about its evaluations: JSON summaries, completions, a Pass@K plot, a table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from es_lightning.evaluation.columns import print_table
from es_lightning.evaluation.runner import EvalResult
from es_lightning.evaluation.strict_json import strict_dumps


def write_eval_outputs(
    eval_dir: Path, tag: str, task: str, result: EvalResult, split: str | None = None
) -> None:
    """Write ``{tag}.json``, ``{tag}_{task}_completions.jsonl`` and ``pass_at_k_{task}.png``."""
    eval_dir.mkdir(parents=True, exist_ok=True)
    summary_file = eval_dir / f"{tag}.json"
    summaries = json.loads(summary_file.read_text()) if summary_file.is_file() else {}
    summaries[task] = {**result.summary, **({"split": split} if split is not None else {})}
    summary_file.write_text(strict_dumps(summaries, indent=2))  # non-finite numbers as null
    result.write_completions(eval_dir / f"{tag}_{task}_completions.jsonl")

    from es_lightning.evaluation.plots import plot_pass_at_k

    curves, problems = {}, {}
    for f in sorted(eval_dir.glob("*.json"), key=lambda p: (p.stem != "before", p.stat().st_mtime)):
        data = json.loads(f.read_text()).get(task, {})
        curve = {int(k.split("@")[1]): v for k, v in data.items() if k.startswith("pass@")}
        if curve:
            curves[f.stem], problems[f.stem] = curve, data.get("n_prompts")
    path = eval_dir / f"pass_at_k_{task}.png"  # the noise band is the first evaluation's (before)
    plot_pass_at_k(curves, path, title=f"{task}: Pass@K", problems=problems)


def print_before_after(before: dict[str, Any], after: dict[str, Any]) -> None:
    """The ``before`` / ``after`` table with a ``change`` column (percentage points)."""
    print_table({"before": before, "after": after}, difference="change")


def print_columns(columns: dict[str, dict[str, Any]]) -> None:
    """One column per evaluation, as :func:`~es_lightning.evaluation.columns.format_table` lays them out."""
    print_table(columns)
