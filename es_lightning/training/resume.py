"""Does a resume continue the run that wrote the checkpoint? Every setting that decides an update
(the strategy's, and the trainer's seed, batch size and data) is compared with the checkpoint's
``hparams.yaml``; a change is refused unless ``trainer.resume_allow_changes`` allows it."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from es_lightning.checkpoint import Checkpoint
from es_lightning.errors import ConfigError
from es_lightning.training.config import TrainerConfig

GUARDED_TRAINER_KEYS = ("seed", "batch_size", "train_limit", "data_offset")
"""Trainer settings an update depends on; every other trainer setting may change on resume."""
FREE_STRATEGY_KEYS = frozenset(
    {
        "checksum_tolerance",  # ES: how the ranks' agreement is checked, not what is computed
        "update",  # ES: accumulated or redrawn: the same update up to the order of float32 sums
        "process_group_backend",
        "micro_batch_size",  # GRPO: memory (gradients accumulate to the same step)
        "gradient_checkpointing",  # GRPO: memory (recomputation, same gradients)
        "signal_window",  # ES: when the no-signal warning is printed, not what is computed
        "signal_threshold",
    }
)
"""Strategy settings that do not change what an update computes; all others are guarded."""


def check_resume_compatible(
    checkpoint: Checkpoint,
    strategy_name: str,
    strategy_hparams: Mapping[str, Any],
    trainer_config: TrainerConfig,
    allow_changes: bool | Sequence[str] | None = None,
    task_name: str | None = None,
) -> list[str]:
    """Refuse to resume from ``checkpoint`` with settings that change what an update computes
    (ConfigError listing each); returns the allowed changes as ``key: old → new`` lines.
    ``allow_changes``: ``True``, a list of keys, or ``None`` for the trainer's setting."""
    if allow_changes is None:
        allow_changes = trainer_config.resume_allow_changes
    recorded = checkpoint.hparams() or {}
    old_strategy = dict(recorded.get("strategy") or {})
    old_trainer = dict(recorded.get("trainer") or {})
    old_name = old_strategy.pop("name", None) or checkpoint.strategy
    if "seed" not in old_trainer and "seed" in checkpoint.state:
        old_trainer["seed"] = checkpoint.state["seed"]
    changes: dict[str, tuple[Any, Any]] = {}  # guarded key: (checkpoint's value, run's value)
    if old_name is not None and old_name != strategy_name:
        changes["strategy.name"] = (old_name, strategy_name)
    else:  # the settings of another strategy are not comparable
        for key in sorted((set(old_strategy) & set(strategy_hparams)) - FREE_STRATEGY_KEYS):
            if not _same(old_strategy[key], strategy_hparams[key]):
                changes[f"strategy.{key}"] = (old_strategy[key], strategy_hparams[key])
    new_trainer = asdict(trainer_config)
    for key in GUARDED_TRAINER_KEYS:
        if key in old_trainer and not _same(old_trainer[key], new_trainer[key]):
            changes[f"trainer.{key}"] = (old_trainer[key], new_trainer[key])
    old_task = recorded.get("task")
    if task_name is not None and old_task is not None and old_task != task_name:
        changes["task"] = (old_task, task_name)
    refused = [key for key in changes if not _allowed(key, allow_changes)]
    lines = [f"{key}: {old!r} → {new!r}" for key, (old, new) in changes.items()]
    if refused:
        listed = "\n".join(f"  {key}: {changes[key][0]!r} → {changes[key][1]!r}" for key in refused)
        raise ConfigError(
            f"trainer.resume: {checkpoint.path} was written with other settings than this run's:\n"
            f"{listed}\n"
            "A resume with them changed would not continue that run. Restore them, start a new run "
            "(another trainer.output_dir), or allow the changes with trainer.resume_allow_changes: "
            f"true (or a list of the keys, e.g. [{refused[0]}])"
        )
    return lines


def _same(old: Any, new: Any) -> bool:
    """Equal as recorded in YAML (tuples are lists there; 1 == 1.0)."""
    if isinstance(old, (list, tuple)) and isinstance(new, (list, tuple)):
        return len(old) == len(new) and all(_same(a, b) for a, b in zip(old, new))
    return bool(old == new)


def _allowed(key: str, allow: bool | Collection[str]) -> bool:
    if isinstance(allow, bool):
        return allow
    return key in allow or key.split(".", 1)[-1] in allow


def finished_message(
    checkpoint: Checkpoint | None, max_steps: int | None, output_dir: str | Path, evaluates_after: bool
) -> str | None:
    """What to say instead of resuming a run that is done; ``None`` when something is left."""
    if checkpoint is None or max_steps is None or checkpoint.step < max_steps:
        return None
    if evaluates_after and not (Path(output_dir) / "eval" / "after.json").is_file():
        return None  # stopped between its last update and its final evaluation: that is left
    return (
        f"{output_dir} is finished: {checkpoint.path.name} is at update {checkpoint.step} "
        f"(trainer.max_steps {max_steps}); nothing to do (raise trainer.max_steps to train further)"
    )
