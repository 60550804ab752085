"""Metrics shared by every strategy, over the values of all ranks (gathered, not averaged).

The ``train/`` names mean the same for ES and GRPO: they are taken over every sampled response of
the update (ES: every member's responses; GRPO: every group's), gathered from all ranks with
:func:`gather_values` first::

    train/reward_mean = mean(v)    train/reward_std = sqrt(mean((v − mean v)²))
    train/reward_max  = max(v)     train/reward_min = min(v)
    train/response_len = mean tokens per response
    train/truncated_frac = fraction of responses that hit max_tokens (finish reason "length")

The spread of the ES population's member rewards R_i (each already a mean over B prompts) is a
different quantity, logged as ``es/member_reward_{std,max,min}`` (:func:`member_metrics`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from lightning.fabric.strategies.parallel import ParallelStrategy

from es_lightning.strategies.base import Sample

SAMPLES_PER_UPDATE = 8
"""Text samples a strategy returns per update (the trainer logs ``trainer.log_samples`` of them)."""


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


def member_metrics(rewards: np.ndarray) -> dict[str, float]:
    """``es/member_reward_{std,max,min}`` of the N member rewards R_i (std with ddof 0)."""
    r = np.asarray(rewards, dtype=np.float64).reshape(-1)
    return {
        "es/member_reward_std": float(r.std()),
        "es/member_reward_max": float(r.max()),
        "es/member_reward_min": float(r.min()),
    }


def response_metrics(lengths: np.ndarray, truncated: np.ndarray) -> dict[str, float]:
    """``train/response_len`` (mean tokens) and ``train/truncated_frac`` of all responses."""
    lengths = np.asarray(lengths, dtype=np.float64).reshape(-1)
    truncated = np.asarray(truncated, dtype=np.float64).reshape(-1)
    if lengths.size == 0:
        return {"train/response_len": 0.0, "train/truncated_frac": 0.0}
    return {"train/response_len": float(lengths.mean()), "train/truncated_frac": float(truncated.mean())}


def response_stats(outputs: Sequence[Any], scores: Sequence[Sequence[Any]]) -> list[tuple[float, int, bool]]:
    """``(reward, tokens, truncated)`` of every response of ``outputs`` (prompt by prompt)."""
    return [
        (float(s.reward), len(c.token_ids), c.finish_reason == "length")
        for out, per in zip(outputs, scores)
        for c, s in zip(out.completions, per)
    ]


def text_samples(
    module: Any,
    rows: Sequence[dict[str, Any]],
    outputs: Sequence[Any],
    scores: Sequence[Sequence[Any]],
    member: int | None = None,
    count: int = SAMPLES_PER_UPDATE,
) -> list[Sample]:
    """The first response to each of the first ``count`` prompts, with its prompt text and reward."""
    return [
        Sample(module.format_prompt(row), out.completions[0].text, float(per[0].reward), member)
        for row, out, per in zip(rows[:count], outputs, scores)
        if out.completions
    ]


def gather_values(strategy: ParallelStrategy, local: torch.Tensor) -> np.ndarray:
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
