"""Group-relative advantages: rewards (P, G) → advantages (P, G), one number per sequence.

* ``"group"`` (GRPO, Shao et al. 2024): Â_i = (r_i − mean(r)) / (std(r) + ε) over the prompt's G.
* ``"batch"``: the same baseline, scaled by the std of all P·G rewards (TRL's
  ``scale_rewards="batch"``), so groups with little spread are not blown up.
* ``"none"``: Â_i = r_i − mean(r).

``scale=False`` drops the division (Dr. GRPO). Stds are population stds (ddof 0, as ES's
z-scores; TRL uses ddof 1, a factor sqrt(G/(G−1)) apart). Zero-variance groups get Â = 0 exactly.
"""

from __future__ import annotations

from typing import Literal

import torch

AdvantageMode = Literal["group", "batch", "none"]
ADVANTAGE_MODES: tuple[str, ...] = ("group", "batch", "none")


def compute_advantages(
    rewards: torch.Tensor,
    mode: AdvantageMode = "group",
    eps: float = 1e-6,
    scale: bool = True,
) -> torch.Tensor:
    """Advantages of (P, G) ``rewards`` in ``mode``, in float64, returned as float32."""
    if mode not in ADVANTAGE_MODES:
        raise ValueError(f"compute_advantages: unknown mode {mode!r}; expected one of {ADVANTAGE_MODES}")
    if eps < 0:
        raise ValueError(f"compute_advantages: eps must be >= 0, got {eps}")
    if not isinstance(rewards, torch.Tensor):
        raise ValueError(f"compute_advantages: rewards must be a torch.Tensor, got {type(rewards).__name__}")
    if rewards.ndim != 2 or rewards.numel() == 0:
        raise ValueError(
            f"compute_advantages: rewards must have shape (P, G) with P, G >= 1, got {tuple(rewards.shape)}"
        )
    r = rewards.detach().to(torch.float64)  # (P, G)
    if not torch.isfinite(r).all():
        raise ValueError("compute_advantages: rewards must be finite")

    # Equal-reward groups: exactly zero (r − mean can be ±1 ulp in floating point).
    flat = (r.amax(dim=1) == r.amin(dim=1)).unsqueeze(1)  # (P, 1)
    centred = torch.where(flat, torch.zeros_like(r), r - r.mean(dim=1, keepdim=True))  # (P, G)
    if mode == "none" or not scale:
        return centred.float()
    if mode == "group":
        std = r.std(dim=1, correction=0, keepdim=True)  # (P, 1)
    else:  # batch
        std = r.std(correction=0)  # ()
    denom = std + eps
    denom = torch.where(denom > 0, denom, torch.ones_like(denom))  # eps=0, zero std: centred is 0 there
    return (centred / denom).float()
