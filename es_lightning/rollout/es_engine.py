"""The ES part of a rollout: the centre θ lives inside the generation engine as fp32 master weights.

A backend that implements only :class:`~es_lightning.rollout.base.Rollout` (generation and weight
loading) serves evaluation and GRPO. ES needs more: perturbing, restoring and updating the weights
where generation happens, so that only seeds and scalars ever cross a process boundary. A backend
that can do that also implements :class:`ESEngine`; :class:`~es_lightning.strategies.ESStrategy`
refuses any other rollout before the first update.

Per update, for each member ``i`` a rank evaluates (the strategy drives this)::

    engine.es_perturb(seed_i, sign_i, σ)      # serve θ + sign_i·σ·ε_i
    outputs = engine.generate(prompts, sampling)
    engine.es_restore()                       # serve θ again, bit-exactly (written lazily)
    ...
    engine.es_update({seed: c}, α, N)         # θ ← θ + (α/N)·Σ_s c_s ε_s

and at a checkpoint the trainer streams ``engine.es_named_weights()`` (the fp32 centre) to disk.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence

import torch

from es_lightning.es.weights import OptimizerName


class ESEngine(ABC):
    """In-engine Evolution Strategies operations on the fp32 centre θ."""

    @abstractmethod
    def es_init(
        self,
        weight_files: Sequence[str] | None = None,
        optimizer: OptimizerName = "sgd",
        optimizer_state: str | None = None,
    ) -> None:
        """Hold an fp32 master of θ read from ``weight_files`` (default: the most precise weights
        of the model the engine serves, see :func:`es_lightning.weight_files.weight_files`), with
        ``optimizer``'s state from the file ``optimizer_state`` when resuming; serve it."""

    @abstractmethod
    def es_perturb(self, seed: int, sign: float, sigma: float) -> None:
        """Serve θ + sign·σ·ε_seed."""

    @abstractmethod
    def es_restore(self) -> None:
        """Serve the centre θ again, bit-exactly. A backend may defer the write until the served
        weights are next read (both built-in ones do: the next member's :meth:`es_perturb` and
        :meth:`es_update` overwrite every served tensor, so a population never writes θ between
        members)."""

    @abstractmethod
    def es_update(self, coeffs: Mapping[int, float], lr: float, population_size: int) -> float:
        """θ ← θ + (α/N)·Σ_s c_s ε_s, then serve it; returns ‖Δ‖₂."""

    @abstractmethod
    def es_checksum(self) -> float:
        """Sum of the fp32 master in float64 (equal centres give equal checksums)."""

    @abstractmethod
    def es_named_weights(self) -> Iterator[tuple[str, torch.Tensor]]:
        """The fp32 centre as ``(HF name, CPU tensor)`` pairs, streamed into this process a bounded
        number of bytes at a time (checkpoints, drift and attribution read it)."""

    @abstractmethod
    def es_save_optimizer(self, path: str) -> None:
        """Write the ES optimizer's state (Adam moments; nothing to restore for plain ES) to ``path``."""
