"""Settings of a training run (the ``trainer:`` block of a recipe)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

import torch

from es_lightning.errors import ConfigError

Precision = Literal[
    "32-true", "bf16-mixed", "16-mixed", "bf16-true", "16-true", "64-true", "transformer-engine"
]
"""Fabric's precision settings (``Fabric(precision=...)``)."""


@dataclass
class TrainerConfig:
    """How long to train, where to write, on which devices."""

    output_dir: str = "runs/es"
    """Run directory: config.yaml, metrics.jsonl, TensorBoard files, checkpoints/, eval/ (created;
    must not be an existing file)."""
    max_steps: int | None = None
    """Updates to run; ``None``: ``epochs`` passes over the training rows."""
    epochs: float = 1.0
    """Passes over the training rows when ``max_steps`` is not set."""
    batch_size: int = 64
    """B: prompts per update (shared by the whole ES population / GRPO group batch)."""
    train_limit: int | None = None
    """Use only the first ``train_limit`` training rows."""
    seed: int = 0
    """Run seed: data order, ES populations and sampling seeds are pure functions of it."""
    accelerator: str = "auto"
    """Fabric accelerator: ``cpu``, ``cuda``, ``auto``."""
    devices: int | str = 1
    """Devices (processes) per node; each runs one rollout engine."""
    num_nodes: int = 1
    """Nodes (launch with torchrun or SLURM; see the README)."""
    checkpoint_every: int = 0
    """Save a checkpoint every this many updates (0: only at the end)."""
    checkpoint_steps: list[int] = field(default_factory=list)
    """Also save a checkpoint after exactly these updates (e.g. ``[1, 2, 3, 5, 7, 10]``: the early
    points of a trajectory that ``checkpoint_every`` would miss); ``keep_last`` never deletes them.
    Steps past the run's end are never reached; in a pipeline they count each stage's own updates."""
    eval_every: int = 0
    """Evaluate every this many updates (0: only before and after training)."""
    eval_before: bool = True
    """Evaluate the starting model."""
    eval_after: bool = True
    """Evaluate the trained model."""
    resume: bool | str = False
    """``true``: continue from the newest checkpoint in ``output_dir``; ``auto``: continue from it
    when there is one, else start over (a requeued cluster job); or a checkpoint folder. The
    checkpoint's recorded settings must match this run's (see ``resume_allow_changes``). Without
    ``resume`` or ``overwrite``, an ``output_dir`` that already holds a run is refused."""
    overwrite: bool = False
    """Start a fresh run in an ``output_dir`` that holds one: its metrics, TensorBoard files,
    checkpoints and evaluations are deleted first (other files are left alone)."""
    keep_last: int | None = None
    """Keep only the newest this many checkpoints (``None``: keep all; at 7B every ES checkpoint is
    about 30 GB), besides those at ``checkpoint_steps``."""
    resume_allow_changes: bool | list[str] = False
    """What a resume may change of the settings that decide an update: the strategy (name and its
    settings such as σ, α, N, normalization, estimator, optimizer, GRPO's group size and clipping)
    and ``seed``, ``batch_size``, ``train_limit``, ``data_offset``. ``false`` (default): a resume
    whose settings differ from the checkpoint's is refused, listing each change, so a resumed run
    is the run that would have continued; ``true``: allow every change (the run is then a new
    experiment that starts from the checkpoint); or a list of the keys to allow, as the refusal
    names them (``[strategy.learning_rate, trainer.batch_size]``). Run length, evaluation,
    checkpointing, devices and logging settings may always change."""
    progress_bar: bool = True
    """Show progress bars with ETA: over the updates, and over each evaluation's generations."""
    log_samples_every: int = 0
    """Every this many updates, write a few of the update's prompts with a response and its reward
    to ``samples.jsonl`` and, as text, to each logger that takes text (TensorBoard, CSV, W&B,
    MLflow); 0: never."""
    log_samples: int = 4
    """How many samples of an update are written (at most as many as the strategy returns)."""
    data_offset: int = 0
    """Index of the first batch in the seeded data order (pipeline stages continue through the data)."""
    precision: Precision | None = None
    """Fabric precision of the trainer's own model (GRPO), applied through ``fabric.autocast()``:
    ``None`` picks ``bf16-mixed`` on CUDA (fp32 weights and optimizer, bf16 autocast) and
    ``32-true`` elsewhere. ES trains no torch model (its serving dtype is ``module.dtype``)."""

    def __post_init__(self) -> None:
        """Refuse nonsensical settings, naming each (:class:`~es_lightning.errors.ConfigError`)."""
        if self.max_steps is not None and self.max_steps < 0:
            raise ConfigError(f"trainer.max_steps must be >= 0, got {self.max_steps}")
        if not (math.isfinite(self.epochs) and self.epochs > 0):
            raise ConfigError(f"trainer.epochs must be > 0, got {self.epochs}")
        for name in ("batch_size", "train_limit", "log_samples", "num_nodes"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"trainer.{name} must be >= 1, got {value}")
        if self.keep_last is not None and self.keep_last < 1:
            raise ConfigError(f"trainer.keep_last must be >= 1 or null, got {self.keep_last}")
        if self.overwrite and self.resume not in (False, "", "false", "False"):
            raise ConfigError(
                f"trainer.overwrite deletes the run that trainer.resume={self.resume!r} would continue; give one"
            )
        for name in ("checkpoint_every", "eval_every", "data_offset", "log_samples_every"):
            if getattr(self, name) < 0:
                raise ConfigError(f"trainer.{name} must be >= 0, got {getattr(self, name)}")
        bad = [step for step in self.checkpoint_steps if isinstance(step, bool) or step < 1]
        if bad:
            raise ConfigError(f"trainer.checkpoint_steps must be updates >= 1, got {bad}")
        if len(set(self.checkpoint_steps)) != len(self.checkpoint_steps):
            raise ConfigError(f"trainer.checkpoint_steps repeats a step: {self.checkpoint_steps}")
        if isinstance(self.devices, int) and not isinstance(self.devices, bool) and self.devices < 1:
            raise ConfigError(f"trainer.devices must be >= 1 (or e.g. 'auto'), got {self.devices}")
        if self.precision is not None and self.precision not in get_args(Precision):
            raise ConfigError(
                f"trainer.precision {self.precision!r} is not a Fabric precision; use one of "
                f"{', '.join(get_args(Precision))} or null"
            )
        if not str(self.output_dir).strip():
            raise ConfigError("trainer.output_dir is empty; give a run directory")
        if Path(self.output_dir).is_file():
            raise ConfigError(f"trainer.output_dir {self.output_dir!r} is an existing file; give a directory")

    def resolved_precision(self) -> str:
        """``precision``, or its default for the accelerator."""
        if self.precision is not None:
            return self.precision
        cuda = self.accelerator in ("cuda", "gpu") or (
            self.accelerator == "auto" and torch.cuda.is_available()
        )
        return "bf16-mixed" if cuda else "32-true"
