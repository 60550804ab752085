"""GRPO's learning-rate schedule: warmup, then constant, linear or cosine decay.

The schedules of ``transformers.get_scheduler``, as a pure function of the optimizer step
s = update · μ + inner iteration (W warmup steps of T = updates · μ), so a resumed run needs no
scheduler state:

    s < W:     η(s) = η · s / W
    linear:    η(s) = η · max(0, (T − s) / (T − W))
    cosine:    η(s) = η · ½ (1 + cos(π · (s − W) / (T − W)))
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
