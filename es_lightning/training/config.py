"""Settings of a training run (the ``trainer:`` block of a recipe)."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class TrainerConfig:
    """How long to train, where to write, on which devices."""

    output_dir: str = "runs/es"
    """Run directory: config.yaml, metrics.jsonl, TensorBoard files, checkpoints/, eval/."""
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
    eval_every: int = 0
    """Evaluate every this many updates (0: only before and after training)."""
    eval_before: bool = True
    """Evaluate the starting model."""
    eval_after: bool = True
    """Evaluate the trained model."""
    resume: bool | str = False
    """``true``: continue from the newest checkpoint in ``output_dir``; or a checkpoint folder."""
    progress_bar: bool = True
    """Show a progress bar with ETA."""
    data_offset: int = 0
    """Index of the first batch in the seeded data order (pipeline stages continue through the data)."""
    precision: str | None = None
    """Fabric precision of the trainer's own model (GRPO): ``None`` picks ``bf16-mixed`` on CUDA
    (fp32 weights and optimizer, bf16 autocast) and ``32-true`` elsewhere. ES trains no torch model."""

    def __post_init__(self) -> None:
        if self.max_steps is not None and self.max_steps < 0:
            raise ValueError(f"trainer.max_steps must be >= 0, got {self.max_steps}")
        if self.epochs <= 0:
            raise ValueError(f"trainer.epochs must be > 0, got {self.epochs}")
        if self.batch_size < 1:
            raise ValueError(f"trainer.batch_size must be >= 1, got {self.batch_size}")
        if self.checkpoint_every < 0 or self.eval_every < 0:
            raise ValueError("trainer.checkpoint_every and trainer.eval_every must be >= 0")
        if self.data_offset < 0:
            raise ValueError(f"trainer.data_offset must be >= 0, got {self.data_offset}")
        if self.train_limit is not None and self.train_limit < 1:
            raise ValueError(f"trainer.train_limit must be >= 1, got {self.train_limit}")

    def resolved_precision(self) -> str:
        """``precision``, or its default for the accelerator."""
        if self.precision is not None:
            return self.precision
        cuda = self.accelerator in ("cuda", "gpu") or (
            self.accelerator == "auto" and torch.cuda.is_available()
        )
        return "bf16-mixed" if cuda else "32-true"
