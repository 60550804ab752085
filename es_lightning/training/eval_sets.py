"""The trainer's evaluations: its evaluation sets (:func:`load_eval_sets`), their evaluation on
every rank's engine (:func:`evaluate_sets`, the trainer's and the callbacks' one path), and what a
run writes about them (:func:`write_eval_outputs`: JSON summaries, completions, a Pass@K plot; the
tables printed)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm.auto import tqdm

from es_lightning.errors import ConfigError
from es_lightning.evaluation.offline import strict_dumps
from es_lightning.evaluation.runner import EvalConfig, EvalResult, evaluate_rows_sharded
from es_lightning.evaluation.summary import AVERAGE_KEY, average_over_tasks, metric_names
from es_lightning.presets import HELDOUT_AVERAGE_KEY, IN_DOMAIN_AVERAGE_KEY, average_groups
from es_lightning.tasks.base import Task

if TYPE_CHECKING:
    from es_lightning.training.callbacks import TrainerView

EvalSet = tuple[str, Task, list[dict[str, Any]]]
"""``(name, task, rows)``: one evaluation set; ``name`` keys its metrics (``eval/{name}/...``)."""
GROUP_NAMES = (HELDOUT_AVERAGE_KEY, IN_DOMAIN_AVERAGE_KEY)


def load_eval_sets(evaluation: EvalConfig | None, eval_tasks: dict[str, Task]) -> list[EvalSet]:
    """The rows of ``evaluation.split`` (at most ``limit``) of every task of ``eval_tasks``."""
    if evaluation is None:
        return []
    reserved = (AVERAGE_KEY, *GROUP_NAMES)
    bad = [name for name in eval_tasks if not name or "/" in name or name in reserved]
    if bad:
        raise ConfigError(
            f"eval_tasks: names {bad} are not usable in metric keys (no '/', none of {reserved})"
        )
    split = evaluation.split  # test, or validation when settings are being selected
    return [(name, task, task.load(split)[: evaluation.limit]) for name, task in eval_tasks.items()]


def evaluate_sets(
    trainer: TrainerView, sets: list[EvalSet], tag: str, prefix: str, config: EvalConfig
) -> dict[str, dict[str, float]]:
    """Evaluate ``sets`` on every rank's engine; rank 0 writes, logs and returns the summaries."""
    fabric = trainer.fabric
    if fabric is None:
        raise RuntimeError("evaluate_sets: the run has not launched")
    summaries: dict[str, dict[str, float]] = {}
    for name, task, rows in sets:
        if fabric.is_global_zero:
            shown = len(rows) if config.limit is None else min(len(rows), config.limit)
            greedy = " + greedy" if config.greedy else ""
            tqdm.write(
                f"evaluating {name} ({tag}): {shown} prompts x {config.num_samples} samples at "
                f"T={config.temperature:g}{greedy}",
                file=sys.stderr,  # stdout holds the results alone
            )
        result = evaluate_rows_sharded(
            trainer.module.with_task(task),
            trainer.rollout,
            rows,
            config,
            progress=trainer.config.progress_bar and fabric.is_global_zero,
            desc=name,
            rank=fabric.global_rank,
            world_size=fabric.world_size,
        )
        if result is None:  # not rank 0
            continue
        summaries[name] = result.summary
        write_eval_outputs(trainer.output_dir / prefix, tag, name, result, split=config.split)
        trainer.log(metric_names(name, result.summary, prefix=prefix))
    if len(summaries) > 1:
        groups = average_groups(summaries, training_task=trainer.module.task.name)
        summaries = average_over_tasks(summaries, groups=groups)
        for key in (AVERAGE_KEY, *groups):
            trainer.log(metric_names(key, summaries[key], prefix=prefix))
    return summaries


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
