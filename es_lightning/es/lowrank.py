"""Low-rank ES directions (EGGROLL, "Evolution Strategies at the Hyperscale"): ε = A·Bᵀ/√r per matrix.

``perturbation: lowrank`` replaces ε_s of every weight matrix W (d_out × d_in) by

    E_s = A_s·B_sᵀ/√r,   A_s ∈ R^{d_out×r},  B_s ∈ R^{d_in×r}  standard normal,

drawn from full-rank noise's generator for (s, W's name); 1/√r keeps unit variance per entry, so σ
means the same. ``lowrank_targets: linear`` leaves the embedding and output head still (what vLLM
serves as LoRA); 1-D tensors never move. The update is exact from seeds, one product per matrix::

    θ_W ← θ_W + (α/(N√r))·[c_1 A_1 | … | c_S A_S]·[B_1 | … | B_S]ᵀ
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import torch

from es_lightning.es.noise import param_seed
from es_lightning.es.update import Direction

if TYPE_CHECKING:
    from transformers import PreTrainedModel

Perturbation = Literal["full", "lowrank"]
PERTURBATIONS: tuple[str, ...] = ("full", "lowrank")
LowRankTargets = Literal["matrices", "linear"]
LOWRANK_TARGETS: tuple[str, ...] = ("matrices", "linear")


def is_perturbed(shape: Sequence[int] | torch.Size) -> bool:
    """Whether a tensor of ``shape`` moves under low-rank ES: matrices only."""
    return len(shape) == 2


def lowrank_factors(
    seed: int,
    name: str,
    shape: Sequence[int] | torch.Size,
    rank: int,
    device: torch.device | str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(A, B), float32 standard normal (d_out, r) and (d_in, r), for matrix ``name`` under ``seed``."""
    if not is_perturbed(shape):
        raise ValueError(f"lowrank_factors: {name!r} has shape {tuple(shape)}, not a matrix")
    device = torch.device("cpu") if device is None else torch.device(device)
    gen = torch.Generator(device=device)
    gen.manual_seed(param_seed(seed, name))
    d_out, d_in = int(shape[0]), int(shape[1])
    a = torch.randn((d_out, rank), generator=gen, device=device, dtype=torch.float32)
    b = torch.randn((d_in, rank), generator=gen, device=device, dtype=torch.float32)
    return a, b


@dataclass(frozen=True)
class LowRankNoise:
    """The low-rank directions E_s of rank ``rank``; the matrices in ``fixed`` never move."""

    rank: int
    fixed: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if self.rank < 1:
            raise ValueError(f"LowRankNoise: rank must be >= 1, got {self.rank}")

    def moves(self, name: str, shape: Sequence[int] | torch.Size) -> bool:
        """Whether the tensor ``name`` of ``shape`` is perturbed and updated: a matrix not in ``fixed``."""
        return is_perturbed(shape) and name not in self.fixed

    @property
    def scale(self) -> float:
        """1/√r."""
        return 1.0 / math.sqrt(self.rank)

    def noise(
        self,
        seed: int,
        name: str,
        shape: Sequence[int] | torch.Size,
        device: torch.device | str | None = None,
    ) -> torch.Tensor:
        """E_s of tensor ``name`` as a dense float32 tensor (zeros for a tensor that does not move)."""
        if not self.moves(name, shape):
            return torch.zeros(tuple(shape), dtype=torch.float32, device=device)
        a, b = lowrank_factors(seed, name, shape, self.rank, device)
        return (a @ b.T).mul_(self.scale)

    def direction(self, coeffs: Mapping[int, float]) -> Direction:
        """D = Σ_s c_s·A_s B_sᵀ/√r per tensor (zeros where nothing moves), on the master's device."""

        def direction(name: str, master: torch.Tensor) -> torch.Tensor:
            used = [(s, float(c)) for s, c in coeffs.items() if c != 0.0]
            if not self.moves(name, master.shape) or not used:
                return torch.zeros(master.shape, dtype=torch.float32, device=master.device)
            factors = [lowrank_factors(s, name, master.shape, self.rank, master.device) for s, _ in used]
            a = torch.cat([f[0].mul_(c) for f, (_, c) in zip(factors, used, strict=True)], dim=1)
            b = torch.cat([f[1] for f in factors], dim=1)  # (d_in, S·r)
            return (a @ b.T).mul_(self.scale)  # (d_out, S·r) @ (S·r, d_in)

        return direction

    def member_factors(
        self,
        members: Sequence[tuple[int, float]],
        name: str,
        shape: Sequence[int] | torch.Size,
        sigma: float,
        device: torch.device | str | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Stacked factors of ``members``: A (M, d_out, r) scaled by sign·σ/√r, and B (M, d_in, r)."""
        pairs = [lowrank_factors(seed, name, shape, self.rank, device) for seed, _ in members]
        scales = torch.tensor([sign * sigma * self.scale for _, sign in members], dtype=torch.float32)
        a = torch.stack([p[0] for p in pairs]) * scales.to(pairs[0][0].device)[:, None, None]
        b = torch.stack([p[1] for p in pairs])
        return a.to(dtype), b.to(dtype)


def embedding_weight_names(model: PreTrainedModel) -> frozenset[str]:
    """The names (tied ones too) of a transformers model's input embedding and output head weights."""
    heads: list[torch.nn.Module] = [model.get_input_embeddings()]
    output = model.get_output_embeddings()
    if output is not None:
        heads.append(output)
    weights = {id(h.weight) for h in heads if isinstance(getattr(h, "weight", None), torch.Tensor)}
    return frozenset(n for n, p in model.named_parameters(remove_duplicate=False) if id(p) in weights)
