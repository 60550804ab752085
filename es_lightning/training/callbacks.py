"""The callback contract: every hook the trainer calls, when, and with what.

Subclass :class:`Callback` and override the hooks you need, or pass any object with at least one
hook (``fabric.call`` skips missing hooks and drops keywords a hook does not take). Hooks run on
every rank; :meth:`Callback.state_dict` is saved in each checkpoint and restored on resume.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from es_lightning.init_args import RecordsInit

if TYPE_CHECKING:
    import torch
    from lightning.fabric import Fabric

    from es_lightning.evaluation.runner import EvalConfig
    from es_lightning.module import ReasoningModule
    from es_lightning.rollout.base import Rollout
    from es_lightning.strategies.base import PopulationResult
    from es_lightning.tasks.base import Task
    from es_lightning.training.config import TrainerConfig

HOOKS = (
    "on_fit_start",
    "on_train_batch_end",
    "on_population_end",
    "on_evaluate_end",
    "on_checkpoint",
    "on_fit_end",
)
"""The hooks the trainer calls, in the order they first fire."""


class TrainerView(Protocol):
    """What a hook may use of the trainer that calls it."""

    fabric: Fabric | None
    """Rank, world size, barrier, device (set once the run launched)."""
    step: int
    """Updates done."""
    should_stop: bool
    """Set it to ``True`` to end the run cleanly after the current update (checkpoint, final
    evaluation, ``on_fit_end``, exit 0), as Lightning's ``trainer.should_stop``."""
    output_dir: Path
    config: TrainerConfig
    module: ReasoningModule
    """Encodes prompts and scores completions (``module.encode(rows)``, ``module.score(rows, outputs)``)."""
    rollout: Rollout
    """Generates with the current weights."""

    def log(self, metrics: dict[str, float], step: int | None = None) -> None:
        """Log scalars to every logger at update ``step`` (default: the current one)."""
        ...

    def named_weights(self) -> Iterator[tuple[str, torch.Tensor]]:
        """The current fp32 weights, one tensor at a time; call it on every rank."""
        ...

    def evaluate_sets(
        self,
        eval_sets: list[tuple[str, Task, list[dict[str, Any]]]],
        tag: str,
        prefix: str = "eval",
        config: EvalConfig | None = None,
    ) -> dict[str, dict[str, float]]:
        """The trainer's evaluation of ``(name, task, rows)`` sets; call it on every rank."""
        ...


class Callback(RecordsInit):
    """Base class of es-lightning callbacks; every hook is a no-op."""

    def on_fit_start(self, trainer: TrainerView) -> None:
        """After the engines started, the strategy prepared and (on resume) callback state was
        restored; before the evaluation of the starting model."""

    def on_train_batch_end(self, trainer: TrainerView, step: int, metrics: dict[str, float]) -> None:
        """After update ``step`` (1-based: the number of updates done) and its ``metrics`` were logged."""

    def on_population_end(self, trainer: TrainerView, step: int, population: PopulationResult) -> None:
        """ES only, after update ``step``, before ``on_train_batch_end``: the population's seeds,
        signs, member rewards R_i, per-member per-prompt rewards and normalised z_i."""

    def on_evaluate_end(
        self, trainer: TrainerView, step: int, tag: str, results: dict[str, dict[str, float]]
    ) -> None:
        """After the trainer's evaluation ``tag`` (``before``, ``step-000010``, ``after``);
        ``results`` is ``{task: summary}`` on rank 0 and empty elsewhere."""

    def on_checkpoint(self, trainer: TrainerView, step: int, path: Path) -> None:
        """After checkpoint ``path`` was written (all ranks waited for it)."""

    def on_fit_end(self, trainer: TrainerView, results: dict[str, Any]) -> None:
        """After the final evaluation; ``results`` holds ``before``/``after`` summaries."""

    def state_dict(self) -> dict[str, Any]:
        """State to save with each checkpoint (empty: nothing to restore)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned when the run resumes."""


def check_callbacks(callbacks: list[Any] | None) -> list[Any]:
    """``callbacks`` as a list, each a :class:`Callback` or an object with a hook; else refused."""
    checked = list(callbacks or [])
    for i, cb in enumerate(checked):
        if isinstance(cb, Callback):
            continue
        if isinstance(cb, (str, bytes, dict, type)) or not any(callable(getattr(cb, h, None)) for h in HOOKS):
            raise TypeError(
                f"callbacks[{i}]: {cb!r} ({type(cb).__name__}) is not a callback; give an instance of "
                "es_lightning.callbacks.Callback (or an object with one of the hooks "
                f"{', '.join(HOOKS)}), e.g. `{{class_path: es_lightning.callbacks.ParameterDrift}}`"
            )
    return checked


def callbacks_state(callbacks: list[Any]) -> dict[str, Any]:
    """What a checkpoint keeps: ``{"{i}:{class name}": state_dict()}`` of each callback with one."""
    return {
        f"{i}:{type(cb).__name__}": cb.state_dict()
        for i, cb in enumerate(callbacks)
        if callable(getattr(cb, "state_dict", None))
    }


def load_callbacks_state(callbacks: list[Any], saved: dict[str, Any]) -> None:
    """Give each callback its state from ``saved``, matched by position and class name."""
    for i, cb in enumerate(callbacks):
        key = f"{i}:{type(cb).__name__}"
        if key in saved and callable(getattr(cb, "load_state_dict", None)):
            cb.load_state_dict(saved[key])
