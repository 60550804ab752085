"""The low-rank ES part of a rollout: every member of a population served in one generation call::

    engine.es_reserve_population(N, r)            # before the engine starts: room for N members
    engine.es_init(...)
    engine.es_use_lowrank(r, fixed)               # perturb, restore and update with A Bᵀ/√r
    outputs = engine.es_generate_population(prompts, sampling, members, σ, sampling_seeds)

Transformers serves members with forward hooks, vLLM with LoRA adapters.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Sequence

from es_lightning.rollout.base import RolloutOutput, SamplingConfig


class PopulationEngine(ABC):
    """Low-rank ES members generated together, each batch row under its own member's weights."""

    lowrank_targets_served: tuple[str, ...] = ("matrices", "linear")
    """The ``lowrank_targets`` this engine can serve (:class:`~es_lightning.es.lowrank.LowRankTargets`)."""

    def es_reserve_population(self, members: int, rank: int) -> None:
        """Before the engine starts: room for ``members`` low-rank members of rank ``rank``."""
        return None

    @abstractmethod
    def es_use_lowrank(self, rank: int | None, fixed: Collection[str] = ()) -> None:
        """Use low-rank directions of rank ``rank`` (``None``: full rank), ``fixed`` held still."""

    @abstractmethod
    def es_generate_population(
        self,
        prompts: Sequence[Sequence[int]],
        sampling: SamplingConfig,
        members: Sequence[tuple[int, float]],
        sigma: float,
        sampling_seeds: Sequence[int],
    ) -> list[list[RolloutOutput]]:
        """Every member's responses to ``prompts`` (``[m][j]``), member m serving θ + sign·σ·A Bᵀ/√r."""
