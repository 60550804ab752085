"""Relative L2 drift of the weights from the starting model, D_rel = ‖θ − θ_0‖₂ / ‖θ_0‖₂, overall
and per parameter kind, accumulated in float64 one tensor at a time."""

from __future__ import annotations

import math
from typing import Any

import torch

from es_lightning.analysis.delta import sum_squares, weight_delta
from es_lightning.analysis.kinds import KINDS, parameter_kind


class DriftAccumulator:
    """Σ (Δθ)² and Σ θ_0² per parameter kind, added tensor by tensor (float64)."""

    def __init__(self) -> None:
        self.delta_sq: dict[str, float] = {}
        self.base_sq: dict[str, float] = {}
        self.numel: dict[str, int] = {}

    def add(
        self, name: str, theta0: torch.Tensor, theta: torch.Tensor, delta: torch.Tensor | None = None
    ) -> None:
        """Count tensor ``name`` from ``theta0`` and ``theta``, or a precomputed ``delta``."""
        delta = weight_delta(theta0, theta, name) if delta is None else delta
        kind = parameter_kind(name)
        self.delta_sq[kind] = self.delta_sq.get(kind, 0.0) + sum_squares(delta)
        self.base_sq[kind] = self.base_sq.get(kind, 0.0) + sum_squares(theta0)
        self.numel[kind] = self.numel.get(kind, 0) + delta.numel()

    def merge(self, other: DriftAccumulator) -> DriftAccumulator:
        """Add ``other``'s sums (e.g. another rank's shard of the tensors); returns ``self``."""
        for kind in other.numel:
            self.delta_sq[kind] = self.delta_sq.get(kind, 0.0) + other.delta_sq[kind]
            self.base_sq[kind] = self.base_sq.get(kind, 0.0) + other.base_sq[kind]
            self.numel[kind] = self.numel.get(kind, 0) + other.numel[kind]
        return self

    def result(self) -> dict[str, Any]:
        """The overall and per-kind drift; ``rel_l2`` is ``None`` where ‖θ_0‖ = 0 and Δθ ≠ 0."""
        kinds = [k for k in KINDS if k in self.numel]
        total_delta, total_base = sum(self.delta_sq.values()), sum(self.base_sq.values())
        return {
            "rel_l2": _ratio(total_delta, total_base),
            "rel_l2_by_kind": {k: _ratio(self.delta_sq[k], self.base_sq[k]) for k in kinds},
            "delta_l2": math.sqrt(total_delta),
            "base_l2": math.sqrt(total_base),
            "delta_l2_by_kind": {k: math.sqrt(self.delta_sq[k]) for k in kinds},
            "base_l2_by_kind": {k: math.sqrt(self.base_sq[k]) for k in kinds},
            "numel_by_kind": {k: self.numel[k] for k in kinds},
        }


def _ratio(delta_sq: float, base_sq: float) -> float | None:
    if base_sq > 0:
        return math.sqrt(delta_sq / base_sq)
    return 0.0 if delta_sq == 0 else None
