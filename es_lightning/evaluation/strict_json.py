"""Evaluation files are strict JSON: a non-finite number is written as ``null``."""

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
