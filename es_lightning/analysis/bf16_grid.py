"""Top-k updates that are bf16 rounding, not learning: |Δθ| at the bf16 spacing of the weight.

A bf16 weight near 1.0 can only move by 0.0078125, more than most real updates, so such coordinates
fill a top-k list; an entry is flagged ``bf16_rounding`` when |Δθ| is exactly one spacing of θ_0 or θ.
"""

from __future__ import annotations

import math
from typing import Any

MANTISSA_BITS = 7
"""Explicit fraction bits of bfloat16 (8 significant bits with the implicit one)."""
_SMALLEST_NORMAL_EXPONENT = -126
_TOLERANCE = 1e-6


def bf16_spacing(x: float) -> float:
    """The distance between neighbouring bfloat16 values around ``x``: ``2^(⌊log2|x|⌋ − 7)``.

    >>> bf16_spacing(1.0), bf16_spacing(1.5), bf16_spacing(0.99), bf16_spacing(-2.0)
    (0.0078125, 0.0078125, 0.00390625, 0.015625)
    """
    if not math.isfinite(x):
        return math.inf
    exponent = math.frexp(x)[1] - 1 if x != 0 else _SMALLEST_NORMAL_EXPONENT  # |x| = m·2^e, 1 ≤ m < 2
    return math.ldexp(1.0, max(exponent, _SMALLEST_NORMAL_EXPONENT) - MANTISSA_BITS)


def is_bf16_rounding(theta0: float, delta: float) -> bool:
    """Whether ``delta``, the update of a weight starting at ``theta0``, is exactly one bf16 spacing.

    >>> is_bf16_rounding(1.0, 0.0078125), is_bf16_rounding(1.0, -0.00390625), is_bf16_rounding(1.0, 0.005)
    (True, True, False)
    """
    magnitude = abs(delta)
    return magnitude > 0 and any(
        math.isclose(magnitude, bf16_spacing(x), rel_tol=_TOLERANCE) for x in (theta0, theta0 + delta)
    )


def flag_rounding(entries: list[dict[str, Any]]) -> int:
    """Add ``bf16_spacing`` and ``bf16_rounding`` to each top-k entry; how many are flagged."""
    for entry in entries:
        theta0, delta = float(entry["theta0"]), float(entry["delta"])
        entry["bf16_spacing"] = bf16_spacing(theta0)
        entry["bf16_rounding"] = is_bf16_rounding(theta0, delta)
    return sum(entry["bf16_rounding"] for entry in entries)


def rounding_line(view: str, result: dict[str, Any]) -> str | None:
    """The summary's line for one view's top-k when some entries are flagged, else ``None``."""
    flagged = [e for e in result.get("top_k", []) if e.get("bf16_rounding")]
    if not flagged:
        return None
    kinds: dict[str, int] = {}
    for entry in flagged:
        kinds[entry["kind"]] = kinds.get(entry["kind"], 0) + 1
    by_kind = ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))
    return (
        f"bf16 rounding ({view}): {len(flagged)} of the top-{len(result['top_k'])} updates are one bf16 "
        f"spacing of their weight ({by_kind}; e.g. {flagged[0]['name']} at θ_0 = "
        f"{flagged[0]['theta0']:.6g}, |Δθ| = {flagged[0]['abs_delta']:.6g}): rounding, not learning"
    )
