"""How small the updates are: s_τ = |{i : 0 < |Δθ_i| ≤ τ}| / |{i : |Δθ_i| > 0}|, the fraction of
the *updates* a threshold τ would revert; keys are ``f"{tau:g}"``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from es_lightning.analysis.delta import parse_taus, tau_key, weight_delta


class SparsityAccumulator:
    """Counts of changed coordinates and of those with 0 < |Δθ| ≤ τ per τ, added tensor by tensor.

    Args:
        taus: the thresholds τ (each > 0).
    """

    def __init__(self, taus: Sequence[float]) -> None:
        self.taus = parse_taus(list(taus))
        self.numel = 0
        self.nonzero = 0
        self.small = dict.fromkeys(self.taus, 0)

    def add(
        self, name: str, theta0: torch.Tensor, theta: torch.Tensor, delta: torch.Tensor | None = None
    ) -> None:
        """Count tensor ``name`` (from ``theta0`` and ``theta``, or a precomputed ``delta``)."""
        delta = weight_delta(theta0, theta, name) if delta is None else delta
        magnitude = delta.abs()
        zeros = int((magnitude == 0).sum().item())
        self.numel += magnitude.numel()
        self.nonzero += int((magnitude > 0).sum().item())
        for tau in self.taus:
            at_most = int((magnitude <= torch.tensor(tau, dtype=magnitude.dtype)).sum().item())
            self.small[tau] += at_most - zeros

    def merge(self, other: SparsityAccumulator) -> SparsityAccumulator:
        """Add ``other``'s counts (same τ); returns ``self``."""
        if other.taus != self.taus:
            raise ValueError(f"SparsityAccumulator.merge: τ {other.taus} differ from {self.taus}")
        self.numel += other.numel
        self.nonzero += other.nonzero
        for tau in self.taus:
            self.small[tau] += other.small[tau]
        return self

    def result(self) -> dict[str, Any]:
        """``numel``, ``nonzero`` and s_τ per τ (``None`` when nothing changed)."""
        return {
            "numel": self.numel,
            "nonzero": self.nonzero,
            "sparsity": {
                tau_key(t): (self.small[t] / self.nonzero if self.nonzero else None) for t in self.taus
            },
            "small_updates": {tau_key(t): self.small[t] for t in self.taus},
        }
