"""The trainer's evaluations: its evaluation sets (:func:`load_eval_sets`), and their evaluation on
every rank's engine (:func:`evaluate_sets`, the trainer's and the callbacks' one path)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from tqdm.auto import tqdm

from es_lightning.errors import ConfigError
from es_lightning.evaluation.runner import EvalConfig, evaluate_rows_sharded
from es_lightning.evaluation.summary import AVERAGE_KEY, average_over_tasks, metric_names
from es_lightning.presets import HELDOUT_AVERAGE_KEY, IN_DOMAIN_AVERAGE_KEY, average_groups
from es_lightning.tasks.base import Task
from es_lightning.training.eval_outputs import write_eval_outputs

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
