"""The update Δθ = θ − θ_0 of one tensor in its view, ``stored`` (fp32, an es-lightning
checkpoint's master) or ``bf16`` (both rounded first, as a bf16 engine serves them), and the τ
of the tables; Δθ is compared with τ in fp32, sums of squares in float64.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import torch

from es_lightning.errors import ConfigError

View = Literal["stored", "bf16"]
VIEWS: tuple[View, ...] = ("stored", "bf16")
_CHUNK = 1 << 24  # elements per float64 chunk: bounds the temporary of a 545M-element embedding


def in_view(tensor: torch.Tensor, view: View) -> torch.Tensor:
    """``tensor`` as ``view`` sees it, in fp32 (no copy when it already is fp32 and ``stored``)."""
    if view == "stored":
        return tensor.to(torch.float32)
    if view == "bf16":
        return tensor.to(torch.bfloat16).to(torch.float32)
    raise ValueError(f"unknown view {view!r}; expected one of {VIEWS}")


def weight_delta(theta0: torch.Tensor, theta: torch.Tensor, name: str = "tensor") -> torch.Tensor:
    """Δθ = θ − θ_0 in fp32 (shapes must agree; ``name`` goes into the error)."""
    if theta0.shape != theta.shape:
        raise ValueError(
            f"{name}: shape {tuple(theta.shape)} in the checkpoint but {tuple(theta0.shape)} in the base"
        )
    return theta.to(torch.float32) - theta0.to(torch.float32)


def sum_squares(tensor: torch.Tensor) -> float:
    """Σ x² over ``tensor`` accumulated in float64, chunk by chunk."""
    flat = tensor.detach().reshape(-1)
    return float(sum(chunk.double().square().sum().item() for chunk in flat.split(_CHUNK)))


def tau_key(tau: float) -> str:
    """The JSON key of τ: ``f"{tau:g}"`` (``1.5e-3`` → ``"0.0015"``, ``1e-5`` → ``"1e-05"``)."""
    return f"{tau:g}"


def parse_taus(value: str | float | Sequence[float] | None, option: str = "taus") -> list[float]:
    """τ values from ``"1e-4,5e-4"``, a number or a list; sorted; ValueError naming ``option`` otherwise."""
    if value is None:
        return []
    if isinstance(value, str):
        items: list[object] = [v.strip() for v in value.strip().strip("[]").split(",") if v.strip()]
    elif isinstance(value, int | float):
        items = [value]
    else:
        items = list(value)
    taus = []
    for item in items:
        try:
            tau = float(item)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise ConfigError(f"--{option}: {item!r} is not a number") from None
        if not (math.isfinite(tau) and tau > 0):
            raise ConfigError(f"--{option}: τ must be a finite number > 0, got {item!r}")
        taus.append(tau)
    return sorted(set(taus))
