"""GRPO's settings and the loss's, each field written once with its default and its check."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, get_args

from es_lightning.checked import checked, field_values, one_of, plain_values, refuse_invalid
from es_lightning.grpo.advantages import ADVANTAGE_MODES, AdvantageMode
from es_lightning.grpo.lora import LoRASettings
from es_lightning.grpo.loss import GRPOLoss
from es_lightning.grpo.schedule import Schedule


def _betas_ok(betas: Any) -> bool:
    return len(betas) == 2 and all(0 <= b < 1 for b in betas)


@dataclass(frozen=True)
class GRPOSettings:
    """How GRPO samples, steps and batches (documented on the strategy)."""

    group_size: int = checked(8, lambda g: g >= 2, ">= 2")
    learning_rate: float = checked(1e-6, lambda lr: math.isfinite(lr) and lr > 0, "> 0")
    lr_schedule: Schedule = one_of("constant", get_args(Schedule))
    warmup_steps: int = checked(0, lambda n: n >= 0, ">= 0")
    warmup_ratio: float = checked(0.0, lambda r: 0 <= r < 1, "in [0, 1)")
    weight_decay: float = checked(0.0, lambda wd: wd >= 0, ">= 0")
    adam_betas: tuple[float, float] = checked((0.9, 0.999), _betas_ok, "two values in [0, 1)")
    advantage: AdvantageMode = one_of("group", ADVANTAGE_MODES)
    inner_iterations: int = checked(1, lambda mu: mu >= 1, ">= 1")
    micro_batch_size: int = checked(8, lambda n: n >= 1, ">= 1")
    max_grad_norm: float | None = checked(1.0, lambda n: n is None or n > 0, "null or > 0")
    gradient_checkpointing: bool = False
    lora: LoRASettings | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "adam_betas", tuple(self.adam_betas))  # YAML and the CLI give a list
        refuse_invalid("GRPOSettings", field_values(self), GRPOSettings)


SETTING_NAMES: tuple[str, ...] = tuple(f.name for cls in (GRPOSettings, GRPOLoss) for f in fields(cls))
"""Every GRPO setting: the fields of :class:`GRPOSettings` and :class:`GRPOLoss` (no name in both)."""


def build_settings(**values: Any) -> tuple[GRPOSettings, GRPOLoss]:
    """The settings and the loss from ``values``; a ConfigError names every bad value."""
    refuse_invalid("GRPOStrategy", values, GRPOSettings, GRPOLoss)
    loss_names = {f.name for f in fields(GRPOLoss)}
    settings = GRPOSettings(**{k: v for k, v in values.items() if k not in loss_names})
    return settings, GRPOLoss(**{k: v for k, v in values.items() if k in loss_names})


def settings_hparams(settings: GRPOSettings, loss: GRPOLoss) -> dict[str, Any]:
    """Every GRPO setting once as a plain value, in :data:`SETTING_NAMES`' order (``hparams.yaml``)."""
    return {**plain_values(settings), **plain_values(loss)}
