"""The low-rank ES part of a rollout: every member of a population served in one generation call.

A backend that can add member i's σ·A_i B_iᵀ/√r per batch row without writing weights implements
:class:`PopulationEngine`; the transformers rollout does it with forward hooks
(:mod:`es_lightning.rollout.hf_population`), the vLLM rollout with LoRA adapters
(:mod:`es_lightning.rollout.vllm.population`)::

    engine.es_reserve_population(N, r)            # before the engine starts: room for N members
    engine.es_init(...)
    engine.es_use_lowrank(r, fixed)               # perturb, restore and update with A Bᵀ/√r
    outputs = engine.es_generate_population(prompts, sampling, members, σ, sampling_seeds)
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
        """Before the engine starts: make room to serve up to ``members`` low-rank members of rank
        ``rank`` in one call (default: nothing to reserve)."""
        return None

    @abstractmethod
    def es_use_lowrank(self, rank: int | None, fixed: Collection[str] = ()) -> None:
        """From now on perturb, restore and update the centre with low-rank directions of rank
        ``rank`` (``None``: full-rank ε again), the matrices named in ``fixed`` held still
        (:class:`~es_lightning.es.lowrank.LowRankNoise`); call after ``es_init``."""

    @abstractmethod
    def es_generate_population(
        self,
        prompts: Sequence[Sequence[int]],
        sampling: SamplingConfig,
        members: Sequence[tuple[int, float]],
        sigma: float,
        sampling_seeds: Sequence[int],
    ) -> list[list[RolloutOutput]]:
        """Every member's responses to ``prompts``: member m = (seed, sign) serves
        θ + sign·σ·A_seed B_seedᵀ/√r; ``[m][j]`` is its output for prompt j, each response drawn
        from :func:`~es_lightning.rollout.seeds.sample_seed` (sampling_seeds[m], j, k)."""
