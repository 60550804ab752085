"""Sequential pipelines: several optimizers in order on one model with one total update budget.

Stage i starts from stage i−1's fp32 master, continues the same data order and writes its own
folder ``{output_dir}/stage{i}_{name}``; the loggers see one step axis. Processes are launched
once, by the first stage; later stages reuse them and the process group.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lightning.fabric.utilities.rank_zero import rank_zero_only

from es_lightning.checkpoint import Checkpoint, latest_checkpoint, newest_intact_checkpoint
from es_lightning.console import launched_rank
from es_lightning.errors import ConfigError
from es_lightning.rollout.base import SamplingConfig
from es_lightning.strategies.base import ReasoningStrategy
from es_lightning.training.batches import steps_for_epochs
from es_lightning.training.loggers import tensorboard_logger
from es_lightning.training.run_dir import hold_run_lock, prepare_run_dir


@dataclass
class Stage:
    """One stage of a pipeline."""

    strategy: ReasoningStrategy
    """The stage's optimizer (ESStrategy or GRPOStrategy with its settings)."""
    fraction: float = 0.5
    """Share of the total update budget (the fractions of all stages add up to 1)."""
    name: str | None = None
    """Folder and log name; default: the strategy's name (``es``, ``grpo``)."""
    train_sampling: SamplingConfig | None = None
    """The stage's training sampling (e.g. greedy ES, then GRPO at T = 1.0); default: the module's."""


def stage_names(stages: list[Stage]) -> list[str]:
    return [s.name or getattr(s.strategy, "strategy_name", type(s.strategy).__name__.lower()) for s in stages]


def split_budget(total: int, stages: list[Stage]) -> list[int]:
    """Updates per stage: ``round(fraction · total)``, the last stage taking the remainder."""
    if not stages:
        raise ConfigError("stages: give at least one stage")
    fractions = [s.fraction for s in stages]
    if any(f <= 0 for f in fractions) or abs(sum(fractions) - 1.0) > 1e-6:
        raise ConfigError(f"stages: fractions must be positive and add up to 1, got {fractions}")
    steps = [round(f * total) for f in fractions[:-1]]
    steps.append(total - sum(steps))
    if any(n < 1 for n in steps):
        raise ConfigError(f"stages: a total of {total} updates leaves a stage with none ({steps})")
    return steps


def pipeline_name(names: list[str]) -> str:
    """``es_then_grpo``, ``grpo_then_es``, ..."""
    return "_then_".join(names)


def _write_plan(output_dir: Path, names: list[str], budgets: list[int]) -> None:
    import json

    output_dir.mkdir(parents=True, exist_ok=True)
    plan = {
        "pipeline": pipeline_name(names),
        "stages": [
            {"name": n, "updates": b, "output_dir": str(output_dir / f"stage{i + 1}_{n}")}
            for i, (n, b) in enumerate(zip(names, budgets))
        ],
    }
    (output_dir / "pipeline.json").write_text(json.dumps(plan, indent=2))


def run_pipeline(
    module: Any,
    stages: list[Stage],
    rollout: Any,
    config: Any,
    hparams: dict[str, Any] | None = None,
    loggers: list[Any] | None = None,
    **shared: Any,
) -> dict[str, Any]:
    """Run the stages one after another; returns ``{stage_name: trainer results}``. ``shared``: what
    every stage's :class:`~es_lightning.training.trainer.Trainer` gets as it is (``evaluation``,
    ``eval_tasks``, ``callbacks``)."""
    from es_lightning.training.trainer import Trainer

    names = stage_names(stages)
    if len(set(names)) != len(names):
        raise ConfigError(f"stages: names must differ, got {names} (set `name:` on repeated strategies)")
    budgets = split_budget(_total_updates(module, config), stages)
    with hold_run_lock(config.output_dir, enabled=launched_rank() == 0):  # one process per folder
        prepare_run_dir(config.output_dir, config.resume, config.overwrite, python=True)  # one per folder
        if hparams is None and launched_rank() == 0:  # from Python: config.yaml as the CLI's
            from es_lightning.training.run_config import record_python_run

            hparams = record_python_run(
                config.output_dir,
                module=module,
                stages=stages,
                rollout=rollout,
                trainer=config,
                loggers=loggers,
                **shared,
            )
        _write_plan(Path(config.output_dir), names, budgets)
        results: dict[str, Any] = {}
        model = module.model
        for i, (stage, name, steps) in enumerate(zip(stages, names, budgets)):
            out = Path(config.output_dir) / f"stage{i + 1}_{name}"
            done = newest_intact_checkpoint(out) if config.resume else None
            if done is not None and Checkpoint(done).step >= steps:
                model = str(done)
                continue
            earlier = sum(budgets[:i])  # the stage's updates follow these on the pipeline's axis
            stage_module = module.with_model(model)
            if stage.train_sampling is not None:
                stage_module.train_sampling = stage.train_sampling
            results[name] = Trainer(
                stage_module,
                stage.strategy,
                copy.deepcopy(rollout),
                _stage_config(config, out, i, steps, earlier, done),
                hparams={**(hparams or {}), "stage": {"index": i + 1, "name": name, "updates": steps}},
                loggers=[
                    *(loggers or []),
                    tensorboard_logger(config.output_dir, _purge_step(i, earlier, done)),
                ],
                step_offset=earlier,
                **shared,
            ).fit()
            model = str(latest_checkpoint(out))
        _print_pipeline_table(Path(config.output_dir), names)
        return results


def _total_updates(module: Any, config: Any) -> int:
    """The pipeline's update budget: ``max_steps``, else ``epochs`` passes over the training rows."""
    if config.max_steps is not None:
        return config.max_steps
    rows = module.task.load("train")[: config.train_limit]
    return steps_for_epochs(len(rows), config.batch_size, config.epochs)


def _stage_config(config: Any, out: Path, index: int, steps: int, earlier: int, done: Path | None) -> Any:
    """Stage ``index``'s trainer settings: its folder, its updates, the data after the earlier stages'."""
    return replace(
        config,
        output_dir=str(out),
        max_steps=steps,
        data_offset=config.data_offset + earlier,
        eval_before=config.eval_before and index == 0,
        resume=done is not None,
        overwrite=done is None,  # a stage not resumed starts over in its own folder
    )


def _purge_step(index: int, earlier: int, done: Path | None) -> int:
    """Where the pipeline's TensorBoard run continues for a stage."""
    if done is not None:
        return earlier + Checkpoint(done).step + 1
    return earlier + 1 if index > 0 else 0


@rank_zero_only
def _print_pipeline_table(output_dir: Path, names: list[str]) -> None:
    """The starting model's evaluation next to each stage's (read from the stages' ``eval/``)."""
    import json

    from es_lightning.evaluation.columns import print_table

    files = {"before": output_dir / f"stage1_{names[0]}" / "eval" / "before.json"}
    for i, name in enumerate(names):
        files[f"after {name}"] = output_dir / f"stage{i + 1}_{name}" / "eval" / "after.json"
    columns = {label: json.loads(f.read_text()) for label, f in files.items() if f.is_file()}
    if "before" in columns and len(columns) > 1:
        print_table(columns)
