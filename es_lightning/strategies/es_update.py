"""The ES update of one population, on one rank or several: accumulated (the ranks' sums added), or
redrawn (each rank draws its share of the tensors); the ranks exchange directions, not centres, so
each takes the step itself and the centre is bit-identical to one rank's.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
import torch

from es_lightning.es.accumulate import LINEAR_NORMALIZATIONS
from es_lightning.es.split import assign_tensors, chunk_names

if TYPE_CHECKING:
    from collections.abc import Callable

    from lightning.fabric.strategies.parallel import ParallelStrategy

    from es_lightning.es.handle import ESHandle

UpdateMode = Literal["accumulate", "redraw"]
UPDATE_MODES: tuple[str, ...] = ("accumulate", "redraw")
EXCHANGE_NUMBERS = 16 * 2**20
"""Numbers per exchanged chunk (64 MiB of float32)."""


def accumulates(update: str, normalization: str, reward_control: str, perturbation: str = "full") -> bool:
    """Whether ``update: accumulate`` applies: z-score or none, true rewards, full-rank directions."""
    return (
        update == "accumulate"
        and normalization in LINEAR_NORMALIZATIONS
        and reward_control == "none"
        and perturbation == "full"
    )


def reward_moments(rewards: np.ndarray, normalization: str) -> tuple[float, float]:
    """(μ, s) with z = (R − μ)/s: mean and ddof-0 sd for ``zscore``, (0, 1) for ``none``."""
    if normalization == "none":
        return 0.0, 1.0
    return float(rewards.mean()), float(rewards.std())


@dataclass
class RankUpdate:
    """The collective part of an update on several ranks: the strategy's all-reduce and its device."""

    strategy: ParallelStrategy
    es: ESHandle

    def _summed(
        self,
        shapes: Mapping[str, tuple[int, ...]],
        local: Callable[[list[str]], Mapping[str, torch.Tensor]],
    ) -> Iterator[dict[str, torch.Tensor]]:
        """Per chunk of tensors, this rank's directions summed over the ranks."""
        numels = {n: int(np.prod(s, dtype=np.int64)) for n, s in shapes.items()}
        device = self.strategy.root_device  # where the collective runs (gloo: CPU, NCCL: the GPU)
        for names in chunk_names(numels, EXCHANGE_NUMBERS):
            mine = local(names)
            flat = torch.cat(
                [
                    mine[n].reshape(-1).to(device)
                    if n in mine
                    else torch.zeros(numels[n], dtype=torch.float32, device=device)
                    for n in names
                ]
            )
            flat = self.strategy.all_reduce(flat, reduce_op="sum")
            parts = torch.split(flat, [numels[n] for n in names])
            yield {n: part.reshape(shapes[n]) for n, part in zip(names, parts, strict=True)}

    def accumulated(self, mean: float, std: float, lr: float, population_size: int) -> float:
        shapes = self.es.shapes()
        chunks = self._summed(shapes, lambda names: self.es.directions(names, mean=mean))
        return self.es.apply_directions(chunks, lr, population_size, std)

    def redrawn(self, coeffs: Mapping[int, float], lr: float, population_size: int) -> float:
        shapes = self.es.shapes()
        numels = {n: int(np.prod(s, dtype=np.int64)) for n, s in shapes.items()}
        owner = assign_tensors(numels, self.strategy.world_size)
        rank = self.strategy.global_rank

        def local(names: list[str]) -> dict[str, torch.Tensor]:
            mine = [n for n in names if owner[n] == rank]
            return self.es.directions(mine, coeffs=coeffs) if mine else {}

        return self.es.apply_directions(self._summed(shapes, local), lr, population_size)


def take_update(
    strategy: ParallelStrategy,
    es: ESHandle,
    coeffs: Mapping[int, float] | None,
    rewards: np.ndarray,
    accumulated: bool,
    learning_rate: float,
    normalization: str,
) -> float:
    """Apply one population's update on every rank (nothing when ``coeffs`` is ``None``); ‖Δ‖₂."""
    lr, size = learning_rate, len(rewards)
    if coeffs is None:
        if accumulated:
            es.accumulate(False)
        return 0.0
    if accumulated:
        mean, std = reward_moments(rewards, normalization)
        if strategy.world_size == 1:
            return es.update_accumulated(mean, std, lr, size)
        return RankUpdate(strategy, es).accumulated(mean, std, lr, size)
    if strategy.world_size == 1:
        return es.update(coeffs, lr, size)
    return RankUpdate(strategy, es).redrawn(coeffs, lr, size)
