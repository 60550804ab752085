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
    engine.es_update({seed: c}, α, N)         # θ ← θ + (α/N)·Σ_s c_s ε_s, every ε_s drawn again

or, to accumulate the update while the members are evaluated (z-scores; no ε drawn twice)::

    engine.es_accumulate(True)                # before the first member
    engine.es_perturb(...); ...; engine.es_record_reward(R_i)     # per member
    engine.es_update_accumulated(μ, s, α, N)  # θ ← θ + (α/N)·Σ_i sign_i (R_i − μ)/s·ε_i

With several ranks the strategy sums per-rank directions (:meth:`ESEngine.es_directions`) and
every rank applies the sum (:meth:`ESEngine.es_apply_directions`). At a checkpoint the trainer streams ``engine.es_named_weights()`` (the fp32 centre) to disk.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence

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
    def es_accumulate(self, active: bool) -> None:
        """``True``: start a population whose update is accumulated: from the next
        :meth:`es_perturb` on, keep each member's ε until :meth:`es_record_reward` gives its reward
        (:mod:`es_lightning.es.accumulate`). ``False``: stop, dropping the sums (a skipped update)."""

    @abstractmethod
    def es_record_reward(self, reward: float) -> None:
        """R_i of the member served by the last :meth:`es_perturb` (accumulating only)."""

    @abstractmethod
    def es_update_accumulated(self, mean: float, std: float, lr: float, population_size: int) -> float:
        """θ ← θ + (α/N)·Σ_i sign_i·(R_i − μ)/s·ε_i from the accumulated sums (μ = 0, s = 1: no
        normalisation), then serve it; ends the population; returns ‖Δ‖₂."""

    @abstractmethod
    def es_fold_seconds(self) -> float:
        """Seconds the current accumulated population has spent folding ε into its sums."""

    @abstractmethod
    def es_tensor_shapes(self) -> dict[str, tuple[int, ...]]:
        """The master tensors' shapes, in the master's order (the split of an update over ranks)."""

    @abstractmethod
    def es_directions(
        self, names: Sequence[str], coeffs: Mapping[int, float] | None = None, mean: float | None = None
    ) -> dict[str, torch.Tensor]:
        """Unscaled float32 directions of the tensors ``names`` (on the master's device, or CPU from
        an engine in another process): Σ_s c_s ε_s drawn again (``coeffs``), or this engine's
        accumulated Σ_i sign_i (R_i − μ) ε_i (``mean`` = μ)."""

    @abstractmethod
    def es_apply_directions(
        self, chunks: Iterable[Mapping[str, torch.Tensor]], lr: float, population_size: int, std: float = 1.0
    ) -> float:
        """θ ← θ + (α/N)·D/s, D given per tensor in chunks covering the master once, in its order;
        then serve it; returns ‖Δ‖₂."""

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
