"""The k largest updates |Δθ_i| over the whole model, and which kinds of parameter hold them; merged
tensor by tensor, ties by name then index, so arrival order does not matter."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from es_lightning.analysis.bf16_grid import flag_rounding
from es_lightning.analysis.delta import weight_delta
from es_lightning.analysis.kinds import KINDS, layer_index, parameter_kind

_CHUNK = 1 << 24
_Entry = tuple[float, str, int, float, float]  # (-|Δθ|, name, flat index, Δθ, θ_0): sorts as above


class TopKAccumulator:
    """A running top-k of |Δθ| coordinates across tensors.

    Args:
        k: how many coordinates to keep (>= 1).
    """

    def __init__(self, k: int) -> None:
        if k < 1:
            raise ValueError(f"--top_k must be >= 1, got {k}")
        self.k = k
        self.entries: list[_Entry] = []
        self.shapes: dict[str, tuple[int, ...]] = {}

    def add(
        self, name: str, theta0: torch.Tensor, theta: torch.Tensor, delta: torch.Tensor | None = None
    ) -> None:
        """Offer tensor ``name``'s largest updates (from ``theta0`` and ``theta``, or ``delta``)."""
        delta = weight_delta(theta0, theta, name) if delta is None else delta
        self.shapes[name] = tuple(delta.shape)
        flat = delta.detach().reshape(-1)
        magnitude = flat.abs()
        if len(self.entries) == self.k and flat.numel() and magnitude.max().item() < -self.entries[-1][0]:
            return  # nothing here beats the current k-th
        index = top_indices(magnitude, self.k)
        values, starts = flat[index].tolist(), theta0.detach().reshape(-1)[index].float().tolist()
        new = [(-abs(v), name, i, v, t0) for i, v, t0 in zip(index.tolist(), values, starts)]
        self.entries = sorted(self.entries + new)[: self.k]

    def merge(self, other: TopKAccumulator) -> TopKAccumulator:
        """Merge ``other``'s top list (e.g. another rank's tensors); returns ``self``."""
        self.shapes.update(other.shapes)
        self.entries = sorted(self.entries + other.entries)[: self.k]
        return self

    def result(self) -> dict[str, Any]:
        """``top_k`` (largest first), ``top_k_by_kind`` and ``top_k_bf16_rounding``."""
        top = [
            {
                "name": name,
                "kind": parameter_kind(name),
                "layer": layer_index(name),
                "index": index,
                "position": [int(i) for i in np.unravel_index(index, self.shapes[name])],
                "delta": delta,
                "abs_delta": -negative,
                "theta0": theta0,
            }
            for negative, name, index, delta, theta0 in self.entries
        ]
        flagged = flag_rounding(top)
        seen = {parameter_kind(name) for name in self.shapes}
        by_kind = {kind: 0 for kind in KINDS if kind in seen}
        for entry in top:
            by_kind[entry["kind"]] += 1
        return {"top_k": top, "top_k_by_kind": by_kind, "top_k_bf16_rounding": flagged}


def top_indices(magnitude: torch.Tensor, k: int) -> torch.Tensor:
    """Flat indices of the ≤ k largest positive values of 1-D ``magnitude``, ties to the lower index."""
    positive = int((magnitude > 0).sum().item())
    count = min(k, positive)
    if count == 0:
        return torch.zeros(0, dtype=torch.long, device=magnitude.device)
    kth = torch.topk(magnitude, count, sorted=True).values[-1]  # > 0
    above = (magnitude > kth).nonzero().reshape(-1)  # fewer than `count`
    need, ties = count - above.numel(), []
    for start in range(0, magnitude.numel(), _CHUNK):  # the first `need` ties in index order
        if need == 0:
            break
        found = (magnitude[start : start + _CHUNK] == kth).nonzero().reshape(-1)[:need] + start
        ties.append(found)
        need -= found.numel()
    return torch.cat([above, *ties])
