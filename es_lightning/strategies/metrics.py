"""Metrics shared by every strategy, over every response of all ranks (gathered, not averaged):
``train/reward_mean``, ``reward_std``, ``reward_max``, ``reward_min``, ``response_len``,
``truncated_frac`` and, for reward functions, ``train/rewards/{name}/mean`` and ``/std``."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
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


def reward_names(module: Any) -> list[str]:
    """The names of the task's reward functions (``[]`` for a task without them)."""
    return list(getattr(module.task, "reward_names", None) or [])


def response_stats(
    outputs: Sequence[Any], scores: Sequence[Sequence[Any]], names: Sequence[str] = ()
) -> list[tuple[float, ...]]:
    """``(reward, tokens, truncated, *each function's reward)`` of every response of ``outputs``."""
    return [
        (
            float(s.reward),
            len(c.token_ids),
            c.finish_reason == "length",
            *(float(s.extra.get(f"rewards/{n}", math.nan)) for n in names),
        )
        for out, per in zip(outputs, scores)
        for c, s in zip(out.completions, per)
    ]


def function_reward_metrics(values: np.ndarray, names: Sequence[str]) -> dict[str, float]:
    """``train/rewards/{name}/mean`` and ``/std`` of each function that returned a number."""
    v = np.asarray(values, dtype=np.float64).reshape(-1, len(names)) if names else np.zeros((0, 0))
    out: dict[str, float] = {}
    for name, column in zip(names, v.T):
        given = column[np.isfinite(column)]
        if given.size:
            out[f"train/rewards/{name}/mean"] = float(given.mean())
            out[f"train/rewards/{name}/std"] = float(given.std())
    return out


def text_samples(
    module: Any,
    rows: Sequence[dict[str, Any]],
    outputs: Sequence[Any],
    scores: Sequence[Sequence[Any]],
    member: int | None = None,
    count: int = SAMPLES_PER_UPDATE,
    advantages: Sequence[float] | None = None,
) -> list[Sample]:
    """The first response to each of the first ``count`` prompts, with its rewards and advantage."""
    samples = []
    for j, (row, out, per) in enumerate(zip(rows[:count], outputs, scores)):
        if not out.completions:
            continue
        score = per[0]
        rewards = {
            k.removeprefix("rewards/"): float(v) for k, v in score.extra.items() if k.startswith("rewards/")
        }
        advantage = None if advantages is None else float(advantages[j])
        samples.append(
            Sample(
                module.format_prompt(row),
                out.completions[0].text,
                float(score.reward),
                member,
                advantage=advantage,
                rewards=rewards,
                logged=dict(getattr(score, "logged", {}) or {}),
            )
        )
    return samples


def with_advantages(samples: list[Sample], z: np.ndarray | None) -> list[Sample]:
    """ES: each member's sample with its member's normalised reward z_i as its advantage."""
    if z is None:
        return samples
    return [replace(s, advantage=float(z[s.member])) if s.member is not None else s for s in samples]


@contextmanager
def timed(timings: dict[str, float], phase: str) -> Iterator[None]:
    """Add the seconds of the block to ``timings[phase]`` (logged as ``time/{phase}``)."""
    t0 = time.perf_counter()
    try:
        yield
    finally:
        timings[phase] = timings.get(phase, 0.0) + time.perf_counter() - t0


def gather_values(strategy: ParallelStrategy, local: torch.Tensor) -> np.ndarray:
    """Every rank's 1-D ``local`` values, concatenated in rank order (counts may differ)."""
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
