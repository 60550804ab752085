"""GRPO's learning-rate schedule: warmup, then constant, linear or cosine decay.

The same schedules as ``transformers.get_scheduler`` (what TRL and verl users set with
``lr_scheduler_type``, ``warmup_steps`` / ``warmup_ratio``), as a pure function of the optimizer
step s = update · μ + inner iteration, with W warmup steps out of T = updates · μ:

    s < W:     η(s) = η · s / W
    constant:  η(s) = η
    linear:    η(s) = η · max(0, (T − s) / (T − W))
    cosine:    η(s) = η · ½ (1 + cos(π · (s − W) / (T − W)))

A pure function of the step needs no scheduler state: a resumed run continues the schedule exactly.
"""

from __future__ import annotations

import math
from typing import Literal

Schedule = Literal["constant", "linear", "cosine"]


def resolve_warmup(total_steps: int, warmup: int = 0, warmup_ratio: float = 0.0) -> int:
    """W: ``warmup`` steps when given, else ``ceil(warmup_ratio · T)`` (as transformers does)."""
    return warmup if warmup > 0 else math.ceil(warmup_ratio * total_steps)


def lr_multiplier(step: int, total_steps: int, warmup: int, schedule: Schedule) -> float:
    """η(s) / η for optimizer step ``step`` (0-based) of ``total_steps`` (formulas above)."""
    if step < warmup:
        return step / max(1, warmup)
    if schedule == "constant":
        return 1.0
    progress = (step - warmup) / max(1, total_steps - warmup)
    if schedule == "linear":
        return max(0.0, 1.0 - progress)
    if schedule == "cosine":
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * progress)))
    raise ValueError(f"unknown learning-rate schedule {schedule!r}")
