"""Reward metrics shared by every strategy, over the values of all ranks (gathered, not averaged).

ES passes the population's N member rewards R_i (already summed across ranks); GRPO passes every
sampled response's reward, gathered from all ranks with :func:`gather_values` first. Either way::

    train/reward_mean = mean(v)    train/reward_std = sqrt(mean((v − mean v)²))
    train/reward_max  = max(v)     train/reward_min = min(v)
"""

from __future__ import annotations

import numpy as np
import torch
from lightning.fabric.strategies import Strategy


def reward_metrics(values: np.ndarray | torch.Tensor) -> dict[str, float]:
    """``train/reward_{mean,std,max,min}`` of ``values`` (std with ddof 0)."""
    v = np.asarray(values.detach().cpu() if isinstance(values, torch.Tensor) else values, dtype=np.float64)
    v = v.reshape(-1)
    if v.size == 0:
        raise ValueError("reward_metrics: no rewards")
    return {
        "train/reward_mean": float(v.mean()),
        "train/reward_std": float(v.std()),
        "train/reward_max": float(v.max()),
        "train/reward_min": float(v.min()),
    }


def gather_values(strategy: Strategy, local: torch.Tensor) -> np.ndarray:
    """Every rank's 1-D ``local`` values, concatenated in rank order (ranks may hold different
    counts: each is padded to the longest with NaN for the gather, then dropped)."""
    local = local.detach().reshape(-1).to(torch.float64)
    if strategy.world_size == 1:
        return local.cpu().numpy()
    device = strategy.root_device
    counts = strategy.all_gather(torch.tensor([local.numel()], device=device)).reshape(-1)
    width = int(counts.max())
    padded = torch.full((width,), float("nan"), dtype=torch.float64, device=device)
    padded[: local.numel()] = local.to(device)
    gathered = strategy.all_gather(padded).reshape(-1, width).cpu()
    return torch.cat([row[: int(n)] for row, n in zip(gathered, counts.cpu())]).numpy()
