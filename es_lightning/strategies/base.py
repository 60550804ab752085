"""What an es-lightning strategy must do, and when the trainer calls it: a Fabric strategy (DDP or
FSDP underneath) that also implements :class:`ReasoningStrategy`. The trainer calls ``prepare``
once, ``training_step`` per update and ``named_weights``/``save_state`` at checkpoints, every
method on every rank with the same arguments, so collectives inside them are safe.
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
    """What one ES update measured, member by member: ``member_prompt_rewards`` and
    ``member_prompt_success`` (N, P), ``rewards`` R_i and the applied ``z`` (``None`` when skipped)."""

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
        """Before any engine starts: refuse (ConfigError) a rollout these settings cannot run on."""
        return None

    @abstractmethod
    def prepare(
        self, fabric: Fabric, module: ReasoningModule, rollout: Rollout, resume: Checkpoint | None
    ) -> None:
        """Once per run on every rank: take the starting (or ``resume``'s) weights and serve them."""

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
        """One update on ``rows``; ``step`` and ``run_seed`` fix every random choice of it."""

    @abstractmethod
    def named_weights(self, rollout: Rollout) -> Iterator[tuple[str, torch.Tensor]]:
        """The current weights as fp32 ``(HF name, CPU tensor)`` pairs, streamed (every rank)."""

    @abstractmethod
    def save_state(self, fabric: Fabric, rollout: Rollout, folder: Path) -> None:
        """Write what exact resume needs beyond the weights into ``folder`` (every rank)."""

    total_updates: int | None = None
    """The run's length in updates, set by the trainer before :meth:`prepare` (schedules use it)."""

    def hparams(self) -> dict[str, Any]:
        """The strategy's settings, recorded in each checkpoint's ``hparams.yaml``."""
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
