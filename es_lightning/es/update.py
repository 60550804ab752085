"""One Evolution-Strategies update: the population, its coefficients and the parameter step.

Per update t (symbols as in the paper):

1. Draw the population: member seeds from :func:`~es_lightning.es.noise.seed_schedule`, a pure
   function of ``(run_seed, t)`` (:meth:`Population.sample`).
2. For each member i: perturb θ ← θ + σ·ε_i, evaluate its reward R_i, restore θ
   (:class:`~es_lightning.es.weights.ESWeights`).
3. Normalise the rewards, R → z (:func:`~es_lightning.es.normalize.normalize_rewards`). If every
   R_i is equal the update is skipped (:func:`member_coefficients` returns ``None``).
4. Update θ ← θ + α·(1/N)·Σ_i z_i ε_i (:func:`apply_es_update`); α absorbs the textbook 1/σ.

How we depart from the public ES code:

- ε is drawn per tensor from (seed, name) (:mod:`es_lightning.es.noise`) or read from a shared
  table (``noise: table``); every path that needs ε draws it from the same source.
- The work is per *seed*: :func:`member_coefficients` folds the members into c_s = Σ sign·z, so
  antithetic pairs (member 2j: θ + σε_j, 2j+1: θ − σε_j) regenerate each ε_s once per tensor. The
  ``rollouts`` budget keeps N members (N/2 directions), ``directions`` N directions (2N members).
- With z-scores the direction can be accumulated while the population runs instead of redrawn
  (:mod:`es_lightning.es.accumulate`); :func:`apply_direction` applies either kind.
- Precision: the step is taken on the fp32 *master* (a lower-precision master is refused); the
  served copy may be bf16, written as master + sign·σ·ε cast once, so restoring is bit-exact
  (the naive ``p.add_(σε); …; p.sub_(σε)`` in bf16 drifts).
- A torch optimizer: :func:`assign_es_grad_` sets ``p.grad = −(1/N)·Σ_s c_s ε_s``, so
  ``SGD(lr=α)`` is exactly plain ES and ``Adam(lr=α)`` an option that rescales per coordinate.
- Common random numbers: members share prompts and sampling seed, each response its own stream;
  optional extras: antithetic pairs, a permuted-reward null, signal diagnostics, low-rank (EGGROLL)
  directions served in one generation call.

:func:`kappa_pair` = Var_j(R(θ+σε_j) − R(θ−σε_j)) / Var_i(R_i): about 2 when a pair's members are
uncoupled, below 1 when pairing cancels evaluation noise.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from es_lightning.es.noise import noise_like, seed_schedule
from es_lightning.es.noise_table import NoiseTable
from es_lightning.es.normalize import Normalization, is_degenerate, normalize_rewards
from es_lightning.es.parallel import map_tensors

_MASTER_DTYPES = (torch.float32, torch.float64)

AntitheticBudget = Literal["rollouts", "directions"]
ANTITHETIC_BUDGETS: tuple[str, ...] = ("rollouts", "directions")
Direction = Callable[[str, torch.Tensor], torch.Tensor]
"""``direction(name, master_tensor)``: a fresh float32 tensor of the master's shape and device, the
unscaled direction of that tensor (e.g. Σ_s c_s·ε_s); the update scales it in place."""


@dataclass(frozen=True)
class Population:
    """The members of one ES update: member i evaluates θ + signs[i]·σ·ε_{seeds[i]}; antithetic
    members (2j, 2j+1) share a seed with signs (+1, −1)."""

    seeds: list[int]
    signs: list[float]
    antithetic: bool = False

    def __post_init__(self) -> None:
        if len(self.seeds) != len(self.signs):
            raise ValueError(f"{len(self.seeds)} seeds but {len(self.signs)} signs")
        if self.antithetic:
            ok = len(self.seeds) % 2 == 0 and all(
                self.seeds[2 * j] == self.seeds[2 * j + 1]
                and self.signs[2 * j] == 1.0
                and self.signs[2 * j + 1] == -1.0
                for j in range(len(self.seeds) // 2)
            )
            if not ok:
                raise ValueError("an antithetic population must list (seed, +1), (seed, -1) pairs")

    @classmethod
    def sample(
        cls,
        run_seed: int,
        step: int,
        population_size: int,
        antithetic: bool,
        budget: AntitheticBudget = "rollouts",
    ) -> Population:
        """The population of update ``step``, a pure function of its arguments."""
        if population_size < 1:
            raise ValueError(f"population_size must be >= 1, got {population_size}")
        if budget not in ANTITHETIC_BUDGETS:
            raise ValueError(f"unknown antithetic budget {budget!r}; expected one of {ANTITHETIC_BUDGETS}")
        if antithetic:
            directions = population_size if budget == "directions" else population_size // 2
            if budget == "rollouts" and population_size % 2 != 0:
                raise ValueError(f"antithetic sampling needs an even population_size, got {population_size}")
            base = seed_schedule(run_seed, step, directions)
            seeds = [s for s in base for _ in range(2)]
            return cls(seeds=seeds, signs=[1.0, -1.0] * directions, antithetic=True)
        seeds = seed_schedule(run_seed, step, population_size)
        return cls(seeds=seeds, signs=[1.0] * population_size, antithetic=False)

    @property
    def size(self) -> int:
        """M, the number of members (evaluations): the N of the update's 1/N."""
        return len(self.seeds)

    def __len__(self) -> int:
        return len(self.seeds)

    @property
    def members(self) -> list[tuple[int, float]]:
        """(seed, sign) of every member, in evaluation order."""
        return list(zip(self.seeds, self.signs, strict=True))


def member_coefficients(
    population: Population,
    rewards: Sequence[float] | np.ndarray,
    normalization: Normalization = "zscore",
) -> dict[int, float] | None:
    """c_s = Σ_{i with seed s} sign_i·z_i in population order; ``None`` when all rewards are equal."""
    r = np.asarray(rewards, dtype=np.float64)
    if r.shape != (population.size,):
        raise ValueError(f"expected {population.size} rewards, got shape {r.shape}")
    if is_degenerate(r):
        return None
    z = normalize_rewards(r, normalization)
    coeffs: dict[int, float] = {}
    for seed, sign, zi in zip(population.seeds, population.signs, z, strict=True):
        coeffs[seed] = coeffs.get(seed, 0.0) + float(sign) * float(zi)
    return coeffs


def _check_master(name: str, t: torch.Tensor) -> None:
    if t.dtype not in _MASTER_DTYPES:
        raise TypeError(
            f"master tensor {name!r} has dtype {t.dtype}; ES master weights must be float32 (or "
            "float64): accumulating updates in a low-precision copy loses them to rounding"
        )


def _direction_sum(
    name: str, ref: torch.Tensor, coeffs: Mapping[int, float], table: NoiseTable | None = None
) -> torch.Tensor:
    """Σ_s c_s·ε_s for one tensor in float32 on ``ref``'s device."""
    acc = torch.zeros(ref.shape, dtype=torch.float32, device=ref.device)
    buffer = torch.empty_like(acc) if table is None else None  # one buffer for every drawn ε_s
    for seed, c in coeffs.items():
        if c == 0.0:  # e.g. an antithetic pair with equal rewards
            continue
        if table is not None:
            eps = table.slice(seed, name, ref.shape)
        else:
            eps = noise_like(seed, name, ref.shape, ref.device, out=buffer)
        acc.add_(eps, alpha=float(c))
    return acc


@torch.no_grad()
def apply_direction(
    params: Mapping[str, torch.Tensor],
    direction: Direction,
    scale: float,
    sq_norms: dict[torch.device, torch.Tensor] | None = None,
) -> float:
    """θ ← θ + scale·D per master tensor, D = ``direction(name, θ)``; returns ‖Δ‖₂; ``sq_norms``
    carries Σ‖Δ‖² across calls, so an update applied in parts sums as one."""
    for name, p in params.items():
        _check_master(name, p)

    def step(name: str, p: torch.Tensor) -> torch.Tensor:
        delta = direction(name, p).mul_(scale)
        p.add_(delta.to(p.dtype))
        return torch.linalg.vector_norm(delta, dtype=torch.float64).square()

    sq_norms = {} if sq_norms is None else sq_norms
    for (_, p), sq in zip(params.items(), map_tensors(step, params.items()), strict=True):
        sq_norms[p.device] = sq_norms[p.device] + sq if p.device in sq_norms else sq
    return math.sqrt(sum(float(v.item()) for v in sq_norms.values()))


@torch.no_grad()
def assign_direction_grad_(params: Mapping[str, torch.Tensor], direction: Direction, scale: float) -> None:
    """Set ``p.grad = scale·D`` (D = ``direction(name, p)``) on every master tensor."""
    for name, p in params.items():
        _check_master(name, p)

    def grad(name: str, p: torch.Tensor) -> torch.Tensor:
        return direction(name, p).mul_(scale).to(p.dtype)

    for (_, p), g in zip(params.items(), map_tensors(grad, params.items()), strict=True):
        p.grad = g


def redrawn_direction(coeffs: Mapping[int, float], table: NoiseTable | None = None) -> Direction:
    """D = Σ_s c_s·ε_s, every ε_s drawn again from its seed, or read from ``table`` (:func:`_direction_sum`)."""
    return lambda name, p: _direction_sum(name, p, coeffs, table)


@torch.no_grad()
def apply_es_update(
    params: Mapping[str, torch.Tensor],
    coeffs: Mapping[int, float],
    lr: float,
    population_size: int,
    table: NoiseTable | None = None,
) -> float:
    """θ ← θ + (α/N)·Σ_s c_s·ε_s in place on the fp32 master tensors; returns ‖Δ‖₂."""
    if population_size < 1:
        raise ValueError(f"population_size must be >= 1, got {population_size}")
    return apply_direction(params, redrawn_direction(coeffs, table), float(lr) / population_size)


@torch.no_grad()
def assign_es_grad_(
    params: Mapping[str, torch.Tensor],
    coeffs: Mapping[int, float],
    population_size: int,
    table: NoiseTable | None = None,
) -> None:
    """Set ``p.grad = −(1/N)·Σ_s c_s·ε_s``, so ``SGD(lr=α).step()`` is :func:`apply_es_update`."""
    if population_size < 1:
        raise ValueError(f"population_size must be >= 1, got {population_size}")
    assign_direction_grad_(params, redrawn_direction(coeffs, table), -1.0 / population_size)


def kappa_pair(rewards: Sequence[float] | np.ndarray, population: Population) -> float:
    """κ_pair = Var_j(R_{2j} − R_{2j+1}) / Var_i(R_i) (population variances); NaN if Var(R) = 0."""
    if not population.antithetic:
        raise ValueError("kappa_pair needs an antithetic population")
    r = np.asarray(rewards, dtype=np.float64)
    if r.shape != (population.size,):
        raise ValueError(f"expected {population.size} rewards, got shape {r.shape}")
    var_r = float(r.var())
    if var_r == 0.0:
        return float("nan")
    diffs = r[0::2] - r[1::2]
    return float(diffs.var()) / var_r
