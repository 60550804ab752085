"""ESStrategy's settings checked before any work: the first bad one is named with what is accepted."""

from __future__ import annotations

import math

from es_lightning.errors import ConfigError
from es_lightning.es.control import REWARD_CONTROLS
from es_lightning.es.lowrank import PERTURBATIONS
from es_lightning.es.update import ANTITHETIC_BUDGETS
from es_lightning.strategies.es_update import UPDATE_MODES


def check_es_settings(
    *,
    population_size: int,
    sigma: float,
    learning_rate: float,
    normalization: str,
    estimator: str,
    antithetic_budget: str,
    responses_per_prompt: int,
    member_sampling_seeds: str,
    member_rollouts: str,
    optimizer: str,
    update: str,
    reward_control: str,
    signal_window: int | None,
    signal_threshold: float,
    checksum_tolerance: float,
    perturbation: str = "full",
    rank: int = 1,
) -> None:
    """Refuse nonsensical ES settings, naming the first bad one and what is accepted."""
    choices = {
        "normalization": (normalization, ("zscore", "rank", "none")),
        "estimator": (estimator, ("one_point", "antithetic")),
        "antithetic_budget": (antithetic_budget, ANTITHETIC_BUDGETS),
        "member_sampling_seeds": (member_sampling_seeds, ("common", "independent")),
        "member_rollouts": (member_rollouts, ("regenerate", "fixed")),
        "optimizer": (optimizer, ("sgd", "adam")),
        "update": (update, UPDATE_MODES),
        "reward_control": (reward_control, REWARD_CONTROLS),
        "perturbation": (perturbation, PERTURBATIONS),
    }
    for name, (value, allowed) in choices.items():
        if value not in allowed:
            raise ConfigError(f"ESStrategy: unknown {name} {value!r}; use {', '.join(allowed)}")
    if population_size < 2:
        raise ConfigError(
            f"ESStrategy: population_size must be >= 2 (z-scores of one reward are undefined), "
            f"got {population_size}"
        )
    if estimator == "antithetic" and antithetic_budget == "rollouts" and population_size % 2:
        raise ConfigError(
            f"ESStrategy: antithetic needs an even population_size (N/2 directions × ±), got "
            f"{population_size}; or antithetic_budget: directions (N directions, 2N members)"
        )
    for name, value in (("sigma", sigma), ("learning_rate", learning_rate)):
        if not (math.isfinite(value) and value > 0):
            raise ConfigError(f"ESStrategy: {name} must be > 0, got {value}")
    if responses_per_prompt < 1:
        raise ConfigError(f"ESStrategy: responses_per_prompt must be >= 1, got {responses_per_prompt}")
    if signal_window is not None and signal_window < 1:
        raise ConfigError(f"ESStrategy: signal_window must be >= 1 or null, got {signal_window}")
    if not -1.0 <= signal_threshold <= 1.0:
        raise ConfigError(f"ESStrategy: signal_threshold must be in [-1, 1], got {signal_threshold}")
    if not checksum_tolerance >= 0:
        raise ConfigError(f"ESStrategy: checksum_tolerance must be >= 0, got {checksum_tolerance}")
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
        raise ConfigError(f"ESStrategy: rank must be an integer >= 1 (the rank r of A·Bᵀ), got {rank!r}")
