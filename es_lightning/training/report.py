"""What a run writes about its evaluations: JSON summaries, completions, a Pass@K plot, a table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from es_lightning.evaluation.runner import EvalResult


def write_eval_outputs(eval_dir: Path, tag: str, task: str, result: EvalResult) -> None:
    """``{tag}.json`` (all tasks' summaries so far), ``{tag}_{task}_completions.jsonl`` and
    ``pass_at_k_{task}.png`` (every tag evaluated so far, one line each)."""
    eval_dir.mkdir(parents=True, exist_ok=True)
    summary_file = eval_dir / f"{tag}.json"
    summaries = json.loads(summary_file.read_text()) if summary_file.is_file() else {}
    summaries[task] = result.summary
    summary_file.write_text(json.dumps(summaries, indent=2))
    result.write_completions(eval_dir / f"{tag}_{task}_completions.jsonl")

    from es_lightning.evaluation.plots import plot_pass_at_k

    curves = {}
    for f in sorted(eval_dir.glob("*.json"), key=lambda p: (p.stem != "before", p.stat().st_mtime)):
        data = json.loads(f.read_text()).get(task, {})
        curve = {int(k.split("@")[1]): v for k, v in data.items() if k.startswith("pass@")}
        if curve:
            curves[f.stem] = curve
    plot_pass_at_k(curves, eval_dir / f"pass_at_k_{task}.png", title=f"{task}: Pass@K")


def _shown(key: str) -> bool:
    return key.startswith(("pass@", "maj@")) or key == "greedy"


def print_before_after(before: dict[str, Any], after: dict[str, Any]) -> None:
    """A plain-text table of every pass@k / maj@k / greedy metric before and after training."""
    lines = [f"{'task':<16} {'metric':<10} {'before':>8} {'after':>8} {'change':>8}"]
    for task, summary in after.items():
        for key, value in summary.items():
            if not _shown(key) or key not in before.get(task, {}):
                continue
            old = before[task][key]
            lines.append(
                f"{task:<16} {key:<10} {100 * old:>7.1f}% {100 * value:>7.1f}% {100 * (value - old):>+7.1f}"
            )
    print("\n".join(lines), flush=True)


def print_columns(columns: dict[str, dict[str, Any]]) -> None:
    """One column per evaluation (e.g. ``before``, ``after es``, ``after grpo``), one row per task
    and pass@k / maj@k / greedy metric that the first column has; ``-`` where a column lacks it."""
    if not columns:
        return
    names = list(columns)
    width = max(10, *(len(n) + 3 for n in names))
    lines = [f"{'task':<16} {'metric':<10}" + "".join(f"{n:>{width}}" for n in names)]
    for task, summary in columns[names[0]].items():
        for key in summary:
            if not _shown(key):
                continue
            cells = []
            for name in names:
                value = columns[name].get(task, {}).get(key)
                cells.append(f"{'-':>{width}}" if value is None else f"{100 * value:>{width - 1}.1f}%")
            lines.append(f"{task:<16} {key:<10}" + "".join(cells))
    print("\n".join(lines), flush=True)
