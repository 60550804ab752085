"""What a rollout's ``es`` offers: the ES centre θ where generation runs, driven by seeds and scalars.

:class:`~es_lightning.es.weights.ESWeights` is the implementation (its methods document each
operation); the transformers rollout holds one in the trainer's process, the vLLM rollout a proxy
to the one in each of its workers (:mod:`es_lightning.rollout.vllm.es_centre`). Per update, for
each member ``i`` a rank evaluates (the strategy drives this)::

    es.perturb(seed_i, sign_i, σ)          # serve θ + sign_i·σ·ε_i
    outputs = rollout.generate(prompts, sampling)
    es.record_reward(R_i)                  # only while accumulating (es.accumulate(True) first)
    es.restore()                           # serve θ again, bit-exactly (written when next read)
    ...
    es.update({seed: c}, α, N)             # θ ← θ + (α/N)·Σ_s c_s ε_s, every ε_s drawn again
    es.update_accumulated(μ, s, α, N)      # or from the sums folded while the members ran

``es.use_noise_table(size)`` (once, after ``es_init``) reads every full-rank ε from a shared table
instead of drawing it (``noise: table``). With several ranks each rank hands out its part of the
direction (``directions``) and applies the summed one (``apply_directions``); checkpoints stream
``named_weights`` and ``save_state``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Protocol

import torch


class ESHandle(Protocol):
    """The ES centre of a rollout (see :class:`~es_lightning.es.weights.ESWeights` per method)."""

    writes: int
    restore_pending: bool

    def perturb(self, seed: int, sign: float, sigma: float) -> None: ...
    def restore(self) -> None: ...
    def serve_centre(self) -> None: ...
    def use_noise_table(self, size: int | None) -> None: ...
    def accumulate(self, active: bool) -> None: ...
    def record_reward(self, reward: float) -> None: ...
    def update(self, coeffs: Mapping[int, float], lr: float, population_size: int) -> float: ...
    def update_accumulated(self, mean: float, std: float, lr: float, population_size: int) -> float: ...
    def directions(
        self, names: Sequence[str], coeffs: Mapping[int, float] | None = None, mean: float | None = None
    ) -> dict[str, torch.Tensor]: ...
    def apply_directions(
        self, chunks: Iterable[Mapping[str, torch.Tensor]], lr: float, population_size: int, std: float = 1.0
    ) -> float: ...
    def shapes(self) -> dict[str, tuple[int, ...]]: ...
    def checksum(self) -> float: ...
    def fold_seconds(self) -> float: ...
    def named_weights(self) -> Iterator[tuple[str, torch.Tensor]]: ...
    def save_state(self, path: str) -> None: ...
