"""What an es-lightning strategy must do, and when the trainer calls it.

A strategy is a Lightning Fabric strategy (DDP or FSDP underneath) that also implements
:class:`ReasoningStrategy`. The trainer drives it on every rank, in this order::

    strategy.prepare(fabric, module, rollout, resume)                # once, before any update
    for step in range(start, max_steps):
        result = strategy.training_step(fabric, module, rollout, rows, step, run_seed)
    checkpoint.save_checkpoint(weights=strategy.named_weights(rollout),
                               write_state=lambda folder: strategy.save_state(fabric, rollout, folder))

Every method runs on every rank with the same arguments, so collectives inside them are safe.
Weights always leave a strategy through :meth:`named_weights`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch

from es_lightning.init_args import RecordsInit

if TYPE_CHECKING:
    from lightning.fabric import Fabric

    from es_lightning.checkpoint import Checkpoint
    from es_lightning.module import ReasoningModule
    from es_lightning.rollout.base import Rollout

Row = dict[str, Any]
"""One dataset row (the task's columns)."""


@dataclass
class PopulationResult:
    """What one ES update measured, member by member (for population-level callbacks).

    ``member_prompt_rewards[i, p]``: member ``i``'s mean reward on prompt ``p``;
    ``member_prompt_success[i, p]``: the share of those responses counted correct; ``rewards[i]``:
    the R_i the update normalised into ``z`` (``None`` when skipped).
    """

    seeds: list[int]
    signs: list[float]
    rewards: np.ndarray  # (N,)
    member_prompt_rewards: np.ndarray  # (N, P)
    member_prompt_success: np.ndarray  # (N, P)
    z: np.ndarray | None  # (N,)
    rows: list[Row] = field(default_factory=list)


@dataclass
class Sample:
    """One prompt and one response of an update, as the trainer's text samples show them."""

    prompt: str
    completion: str
    reward: float
    member: int | None = None
    """ES: the population member that produced it; GRPO: ``None``."""
    advantage: float | None = None
    """The weight the update gave this response: GRPO, its advantage; ES, its member's normalised
    reward z_i (``None`` when the update was skipped, or for the centre's responses)."""
    rewards: dict[str, float] = field(default_factory=dict)
    """Each reward function's reward (reward-function tasks; a function that returned ``None``
    for it is absent), as TRL's completions table shows them."""
    logged: dict[str, Any] = field(default_factory=dict)
    """What reward functions logged for it with TRL's ``log_extra``."""


@dataclass
class StepResult:
    """What :meth:`ReasoningStrategy.training_step` returns."""

    metrics: dict[str, float]
    """Scalars to log at this step (``train/…``, ``es/…``, ``grpo/…``, ``time/…``)."""
    population: PopulationResult | None = None
    """ES only: the population's per-member, per-prompt rewards."""
    samples: list[Sample] = field(default_factory=list)
    """A few of the update's prompts with one response each, for the text samples the trainer
    logs every ``trainer.log_samples_every`` updates."""


class ReasoningStrategy(RecordsInit, ABC):
    """The interface the trainer drives; :class:`ESStrategy` and :class:`GRPOStrategy` implement it."""

    strategy_name: ClassVar[str]
    """Short name (``es``, ``grpo``): log names, checkpoint state folder, pipeline stage names."""

    def check_rollout(self, rollout: Rollout) -> None:
        """Before any engine starts: refuse, with a :class:`~es_lightning.errors.ConfigError`, a
        rollout this strategy's settings cannot run on (default: every rollout is accepted)."""
        return None

    @abstractmethod
    def prepare(
        self, fabric: Fabric, module: ReasoningModule, rollout: Rollout, resume: Checkpoint | None
    ) -> None:
        """Once per run on every rank, after the engine started and before the first update: take
        the starting weights (``module.model``, or ``resume``'s fp32 master and own state) into
        whatever the strategy optimizes, and make the engine serve them."""

    @abstractmethod
    def training_step(
        self,
        fabric: Fabric,
        module: ReasoningModule,
        rollout: Rollout,
        rows: list[Row],
        step: int,
        run_seed: int,
    ) -> StepResult:
        """One update on the mini-batch ``rows`` (the same on every rank); ``step`` is the 0-based
        update index and, with ``run_seed``, fixes every random choice of the update."""

    @abstractmethod
    def named_weights(self, rollout: Rollout) -> Iterator[tuple[str, torch.Tensor]]:
        """The current weights as fp32 ``(HF name, CPU tensor)`` pairs, one tensor at a time;
        called on every rank (ranks other than 0 may get nothing, or copies they discard)."""

    @abstractmethod
    def save_state(self, fabric: Fabric, rollout: Rollout, folder: Path) -> None:
        """Write what exact resume needs beyond the weights (optimizer moments) into ``folder``;
        called on every rank with the same folder (the strategy decides who writes)."""

    total_updates: int | None = None
    """The run's length in updates, set by the trainer before :meth:`prepare` (schedules use it)."""

    def hparams(self) -> dict[str, Any]:
        """The strategy's settings (its constructor's arguments), recorded in each checkpoint's
        ``hparams.yaml``."""
        import inspect

        out: dict[str, Any] = {}
        for name in inspect.signature(type(self).__init__).parameters:
            value = getattr(self, name, getattr(self, f"_{name}", None))
            if isinstance(value, (int, float, str, bool, type(None))):
                out[name] = value
            elif isinstance(value, (tuple, list)):
                out[name] = list(value)
            elif is_dataclass(value) and not isinstance(value, type):  # grouped settings (GRPO's lora)
                out[name] = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(value).items()}
        for skipped in ("self", "kwargs"):
            out.pop(skipped, None)
        return out


def require_strategy(strategy: object) -> ReasoningStrategy:
    """``strategy`` itself when it implements :class:`ReasoningStrategy`; a clear error otherwise."""
    if not isinstance(strategy, ReasoningStrategy):
        raise TypeError(
            f"trainer: strategy {type(strategy).__name__} is not an es-lightning strategy; use `es`, `grpo` "
            "or `grpo_fsdp` (es_lightning.strategies), or implement "
            "es_lightning.strategies.base.ReasoningStrategy"
        )
    return strategy
