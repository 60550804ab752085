"""Group-relative advantages: rewards (P, G) → advantages (P, G).

GRPO (Shao et al., 2024, "DeepSeekMath") samples G responses o_1..o_G for each of P prompts q and
scores them with rewards r_1..r_G. The advantage of every token of response i is one number per
sequence, the reward relative to the other responses to the same prompt:

* ``"group"`` (GRPO): Â_i = (r_i − mean(r)) / (std(r) + ε), mean and std over the G responses
  of the same prompt.
* ``"batch"``: Â_i = (r_i − mean(r)) / (std_batch + ε): the baseline is still the group mean,
  but the scale is the std of all P·G rewards of the batch ("group mean, batch std", TRL's
  ``scale_rewards="batch"``; Liu et al., 2025, "Tricks or Traps? A Deep Dive into RL for LLM
  Reasoning"; REINFORCE++ normalises globally too). Groups with little spread are not blown up
  to unit scale.
* ``"none"``: Â_i = r_i − mean(r), no scaling.

``scale=False`` drops the division in ``"group"`` and ``"batch"`` (Dr. GRPO, Liu et al., 2025,
"Understanding R1-Zero-Like Training", argue the per-group std biases the update towards prompts
that are too easy or too hard); it then equals ``"none"``.

Std convention: population std (ddof=0), std = sqrt((1/G)·Σ_i (r_i − mean r)²), the same as the
ES reward z-score (:mod:`es_lightning.es.normalize`). TRL's ``GRPOTrainer`` uses the unbiased
std (ddof=1, ``torch.std``); for G responses the two differ by the factor sqrt((G−1)/G), so
"group" advantages here are sqrt(G/(G−1)) times smaller than TRL's (0.87× for G=4, 0.97× for G=16).

Zero-variance groups (every response got the same reward, e.g. all correct) carry no signal:
their advantages are exactly 0, never NaN and never rounding noise divided by ε.
"""

from __future__ import annotations

from typing import Literal

import torch

__all__ = ["ADVANTAGE_MODES", "AdvantageMode", "compute_advantages"]

AdvantageMode = Literal["group", "batch", "none"]
ADVANTAGE_MODES: tuple[str, ...] = ("group", "batch", "none")


def compute_advantages(
    rewards: torch.Tensor,
    mode: AdvantageMode = "group",
    eps: float = 1e-6,
    scale: bool = True,
) -> torch.Tensor:
    """Group-relative advantages of P prompts × G responses.

    With r the (P, G) rewards and mean_g, std_g taken over the G responses of one prompt (dim 1):

    * group: Â = (r − mean_g(r)) / (std_g(r) + ε)
    * batch: Â = (r − mean_g(r)) / (std(r) + ε), std over all P·G rewards
    * none:  Â = r − mean_g(r)

    All stds are population stds (ddof=0; TRL uses ddof=1, see the module docstring).
    Computed in float64, returned as float32. Groups whose rewards are all equal get Â = 0.

    Args:
        rewards: (P, G) rewards, P prompts with G responses each (any real dtype).
        mode: ``"group"``, ``"batch"`` or ``"none"``.
        eps: ε added to the std before dividing (>= 0).
        scale: If False, skip the division for ``"group"`` and ``"batch"`` (Dr. GRPO).

    Returns:
        (P, G) float32 advantages on the device of ``rewards``.

    Raises:
        ValueError: if ``rewards`` is not a non-empty finite 2-D tensor, ``mode`` is unknown or
            ``eps`` is negative.
    """
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
