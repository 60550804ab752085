"""Evaluation files are strict JSON: a non-finite number is written as ``null``, never as the bare
``NaN`` / ``Infinity`` that Python's ``json`` writes by default and other JSON readers refuse.

A mean over nothing, or a user task's non-finite reward, is not a number: ``null`` says so to every
reader, and :func:`json.dumps` then runs with ``allow_nan=False`` so nothing non-finite slips through::

    strict_dumps({"mean_reward": float("nan"), "pass@1": 0.5})   # '{"mean_reward": null, "pass@1": 0.5}'
"""

from __future__ import annotations

import json
import math
from typing import Any


def finite_or_none(value: Any) -> Any:
    """``value`` with every non-finite float (NaN, ±inf), however deeply nested, replaced by ``None``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_or_none(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_none(v) for v in value]
    return value


def strict_dumps(value: Any, **kwargs: Any) -> str:
    """:func:`json.dumps` of :func:`finite_or_none` of ``value``, with ``allow_nan=False``."""
    return json.dumps(finite_or_none(value), allow_nan=False, **kwargs)
