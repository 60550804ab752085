"""The ES direction accumulated while the population is evaluated: no ε drawn twice.

With z-scores z_i = (R_i − μ)/s the direction is linear in the rewards::

    Σ_i sign_i·z_i·ε_i = (A − (μ − c)·B) / s,   A = Σ_i sign_i·(R_i − c)·ε_i,   B = Σ_i sign_i·ε_i,

for any c fixed beforehand (``none``: μ = 0, s = 1). :class:`RewardAccumulator` keeps A, B and the
ε of the member being evaluated, folded when its reward is recorded. c is the first reward
recorded, so A sums reward *differences* (rewards near 0.97 would otherwise cancel catastrophically).
Memory: 12 bytes per parameter (8 with a noise table, whose slices are read again instead of held).
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import torch

from es_lightning.es.noise_table import NoiseTable
from es_lightning.es.parallel import map_tensors

LINEAR_NORMALIZATIONS: tuple[str, ...] = ("zscore", "none")
"""Normalisations whose z is an affine function of R (the accumulated update applies)."""


class RewardAccumulator:
    """A = Σ sign_i·(R_i − c)·ε_i and B = Σ sign_i·ε_i over the members this process evaluates:
    :meth:`begin_member` before each perturbation, :meth:`record` its reward, :meth:`direction`
    A − (μ − c)·B at the end (the caller scales by 1/s)."""

    def __init__(self) -> None:
        self.active = False
        self.held: dict[str, torch.Tensor] = {}
        self.table: NoiseTable | None = None
        """Where ε is read again when folded (no :attr:`held` buffers), or ``None``."""
        self._sums: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}  # name -> (A, B)
        self.fold_seconds = 0.0
        self._reset()

    def _reset(self) -> None:
        self.reference: float | None = None  # c
        self._seed: int | None = None  # the seed whose ε is held
        self._a = self._b = 0.0  # its coefficients, summed over its members so far
        self._sign: float | None = None  # the sign of the member awaiting its reward
        self._folded = True

    def start(self, master: Mapping[str, torch.Tensor], table: NoiseTable | None = None) -> None:
        """Begin a population (A = B = 0, buffers reused); with ``table`` nothing is held."""
        self.table = table
        if table is not None:
            self.held = {}
        for name, m in master.items():
            if name not in self._sums or self._sums[name][0].shape != m.shape:
                zeros = torch.zeros(m.shape, dtype=torch.float32, device=m.device)
                self._sums[name] = (zeros, torch.zeros_like(zeros))
            else:
                self._sums[name][0].zero_()
                self._sums[name][1].zero_()
            if table is None and (name not in self.held or self.held[name].shape != m.shape):
                self.held[name] = torch.empty_like(self._sums[name][0])
        self._reset()
        self.fold_seconds = 0.0
        self.active = True

    def stop(self) -> None:
        """End the population, dropping what was folded (the buffers stay for the next one)."""
        self.active = False
        self._reset()

    @property
    def nbytes(self) -> int:
        """Bytes held by the buffers (A, B and the held ε)."""
        buffers = [*(t for pair in self._sums.values() for t in pair), *self.held.values()]
        return sum(t.numel() * t.element_size() for t in buffers)

    def begin_member(self, seed: int, sign: float, master: Mapping[str, torch.Tensor]) -> bool:
        """Before serving θ + sign·σ·ε_seed: fold the previous seed's ε when the seed changes; returns
        whether :attr:`held` must now be filled with ε_seed (not for an antithetic pair's second)."""
        if not self.active:
            raise RuntimeError("RewardAccumulator: start() a population first")
        if self._sign is not None:
            raise RuntimeError("RewardAccumulator: the previous member's reward was not recorded")
        fresh = seed != self._seed
        if fresh:
            self._fold(master)
            self._seed = seed
        self._sign = float(sign)
        self._b += float(sign)
        self._folded = False
        return fresh and self.table is None

    def record(self, reward: float) -> None:
        """R_i of the member served since :meth:`begin_member`."""
        if self._sign is None:
            raise RuntimeError("RewardAccumulator: record() without a member being evaluated")
        if self.reference is None:
            self.reference = float(reward)
        self._a += self._sign * (float(reward) - self.reference)
        self._sign = None

    def _fold(self, master: Mapping[str, torch.Tensor]) -> None:
        """A += a·ε_held, B += b·ε_held (b = 0 for a whole antithetic pair: skipped)."""
        seed, table = self._seed, self.table
        if self._folded or seed is None:
            return
        t0 = time.perf_counter()
        a, b = self._a, self._b

        def fold(name: str, m: torch.Tensor) -> None:
            sum_a, sum_b = self._sums[name]
            eps = self.held[name] if table is None else table.slice(seed, name, m.shape)
            sum_a.add_(eps, alpha=a)  # every member folds A (also a = 0: a data-independent cost)
            if b != 0.0:
                sum_b.add_(eps, alpha=b)

        for _ in map_tensors(fold, master.items()):
            pass
        self._a = self._b = 0.0
        self._folded = True
        self.fold_seconds += time.perf_counter() - t0

    def finish(self, master: Mapping[str, torch.Tensor]) -> None:
        """Fold the last member (every reward must be recorded); :meth:`direction` may follow."""
        if self._sign is not None:
            raise RuntimeError("RewardAccumulator: the last member's reward was not recorded")
        self._fold(master)

    def direction(self, name: str, mean: float) -> torch.Tensor:
        """A − (μ − c)·B of tensor ``name``: a fresh float32 tensor (call :meth:`finish` first)."""
        if not self._folded:
            raise RuntimeError("RewardAccumulator: finish() the population before reading it")
        sum_a, sum_b = self._sums[name]
        shift = float(mean) - (self.reference if self.reference is not None else 0.0)
        return torch.add(sum_a, sum_b, alpha=-shift)
