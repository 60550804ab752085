"""A run started from Python writes the ``config.yaml`` the command line writes
(:func:`~es_lightning.init_args.to_config`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from es_lightning.init_args import to_config


def python_run_config(
    module: Any,
    strategy: Any = None,
    stages: Any = None,
    rollout: Any = None,
    trainer: Any = None,
    evaluation: Any = None,
    eval_tasks: Any = None,
    callbacks: Any = None,
    loggers: Any = None,
) -> dict[str, Any]:
    """The configuration ``es-lightning fit`` would have recorded for these objects."""
    given = dict(locals(), callbacks=callbacks or None, loggers=loggers or None)  # in the signature's order
    return {key: to_config(value) for key, value in given.items()}


def write_run_config(output_dir: str | Path, config: dict[str, Any]) -> Path:
    """``config`` as ``{output_dir}/config.yaml`` (the folder is created)."""
    path = Path(output_dir) / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    return path


def record_python_run(output_dir: str | Path, **objects: Any) -> dict[str, Any]:
    """:func:`python_run_config` of ``objects``, written to ``{output_dir}/config.yaml``; returns it."""
    config = python_run_config(**objects)
    write_run_config(output_dir, config)
    return config


def record_trainer_run(trainer: Any) -> dict[str, Any]:
    """:func:`record_python_run` of a Trainer's objects, into its output folder."""
    return record_python_run(
        trainer.output_dir,
        module=trainer.module,
        strategy=trainer.strategy,
        rollout=trainer.rollout,
        trainer=trainer.config,
        evaluation=trainer.evaluation,
        eval_tasks=trainer.eval_tasks_given,
        callbacks=trainer.callbacks,
        loggers=trainer.loggers,
    )
