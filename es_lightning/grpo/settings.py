"""The checks of GRPO's settings: every bad value named at once, before anything starts."""

from __future__ import annotations

import math

from es_lightning.errors import ConfigError


def check_grpo_settings(
    *,
    group_size: int,
    learning_rate: float,
    lr_schedule: str,
    warmup_steps: int,
    warmup_ratio: float,
    weight_decay: float,
    adam_betas: tuple[float, ...],
    clip_eps: float,
    clip_eps_high: float | None,
    beta: float,
    advantage: str,
    loss_aggregation: str,
    inner_iterations: int,
    micro_batch_size: int,
    max_grad_norm: float | None,
) -> None:
    """Refuse nonsensical GRPO settings, naming every bad one with its value and what is accepted."""
    checks = {
        "group_size": (group_size, group_size >= 2, ">= 2"),
        "learning_rate": (learning_rate, math.isfinite(learning_rate) and learning_rate > 0, "> 0"),
        "lr_schedule": (
            lr_schedule,
            lr_schedule in ("constant", "linear", "cosine"),
            "constant, linear or cosine",
        ),
        "warmup_steps": (warmup_steps, warmup_steps >= 0, ">= 0"),
        "warmup_ratio": (warmup_ratio, 0 <= warmup_ratio < 1, "in [0, 1)"),
        "weight_decay": (weight_decay, weight_decay >= 0, ">= 0"),
        "adam_betas": (
            list(adam_betas),
            len(adam_betas) == 2 and all(0 <= b < 1 for b in adam_betas),
            "two values in [0, 1)",
        ),
        "clip_eps": (clip_eps, 0 < clip_eps < 1, "in (0, 1)"),
        "clip_eps_high": (clip_eps_high, clip_eps_high is None or clip_eps_high > 0, "null or > 0"),
        "beta": (beta, beta >= 0, ">= 0"),
        "advantage": (advantage, advantage in ("group", "batch", "none"), "group, batch or none"),
        "loss_aggregation": (
            loss_aggregation,
            loss_aggregation in ("token_mean", "sequence_mean"),
            "token_mean or sequence_mean",
        ),
        "inner_iterations": (inner_iterations, inner_iterations >= 1, ">= 1"),
        "micro_batch_size": (micro_batch_size, micro_batch_size >= 1, ">= 1"),
        "max_grad_norm": (max_grad_norm, max_grad_norm is None or max_grad_norm > 0, "null or > 0"),
    }
    bad = [f"{name}={value!r} (must be {rule})" for name, (value, ok, rule) in checks.items() if not ok]
    if bad:
        raise ConfigError(f"GRPOStrategy: invalid {'; '.join(bad)}")
