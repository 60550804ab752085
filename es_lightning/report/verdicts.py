"""The verdict rules: an interval decides, and a claim needs the data and the premise it rests on.

Every measured number comes with one-sided bounds at the report's ``level`` (95 % by default):
``low`` (the claim "above") and ``high`` (the claim "below"); see :class:`Interval`. The rules:

- **direction** ("A raises B", "A > threshold"): ``reproduced`` when ``low > threshold``, ``not
  reproduced`` when ``high ≤ threshold`` (resolved on the other side, or exactly on it), otherwise
  ``not resolved at this scale``. A method with no effect is called reproduced in at most
  ``1 − level`` of evaluations.
- **non-inferiority** ("A keeps B", with a stated ``margin`` δ): ``reproduced`` when
  ``low > −δ``, ``not reproduced`` when ``high < −δ``, otherwise not resolved.
- **range** ("x lies in [a, b]"): ``reproduced`` when ``[low, high]`` lies wholly inside the range,
  ``not reproduced`` when wholly outside, otherwise not resolved (the same rule on both sides).

A claim whose inputs are absent says ``insufficient data: <what is missing>``; one that rests on a
premise that failed says why (``vacuous: ES did not learn``) instead of judging the number.
"""

from __future__ import annotations

from typing import Any

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
UNRESOLVED = "not resolved at this scale"
ONE_SEED = "not resolved (one seed)"
INSUFFICIENT = "insufficient data"
VACUOUS = "vacuous: ES did not learn"

CATEGORIES = (REPRODUCED, NOT_REPRODUCED, "not resolved", INSUFFICIENT, "vacuous")
"""The verdict families, in the order REPORT.md lists them."""


def insufficient(what: str) -> str:
    """``insufficient data: <what>``."""
    return f"{INSUFFICIENT}: {what}"


def category(verdict: str) -> str:
    """The family of a verdict (``not reproduced (on GRPO's trajectory)`` → ``not reproduced``)."""
    for name in (NOT_REPRODUCED, REPRODUCED, INSUFFICIENT, "vacuous"):
        if verdict.startswith(name):
            return name
    return "not resolved"  # "not resolved at this scale", "not resolved (one seed)", ...


def direction(interval: dict[str, Any] | None, expect: str, threshold: float = 0.0) -> str:
    """``expect`` ``greater`` (the claim: estimate > threshold) or ``less``."""
    if not interval:
        return insufficient("no interval")
    if expect == "greater":
        low, high = interval["low"] - threshold, interval["high"] - threshold
    elif expect == "less":
        low, high = threshold - interval["high"], threshold - interval["low"]
    else:
        raise ValueError(f"direction: expect must be 'greater' or 'less', got {expect!r}")
    if low > 0:
        return REPRODUCED
    if high <= 0:
        return NOT_REPRODUCED
    return UNRESOLVED


def non_inferior(interval: dict[str, Any] | None, margin: float, reference: float = 0.0) -> str:
    """The claim "the estimate keeps ``reference``": not below it by more than ``margin``."""
    if not interval:
        return insufficient("no interval")
    if margin < 0:
        raise ValueError(f"non_inferior: margin must be >= 0, got {margin}")
    floor = reference - margin
    if interval["low"] > floor:
        return REPRODUCED
    if interval["high"] < floor:
        return NOT_REPRODUCED
    return UNRESOLVED


def within_range(interval: dict[str, Any] | None, low: float, high: float) -> str:
    """The claim "the estimate lies in ``[low, high]``" (symmetric: the whole interval decides)."""
    if not interval:
        return insufficient("no interval")
    if low <= interval["low"] and interval["high"] <= high:
        return REPRODUCED
    if interval["high"] < low or interval["low"] > high:
        return NOT_REPRODUCED
    return UNRESOLVED


def gated(premise: str | None, verdict: str) -> str:
    """``verdict`` when the premise holds (``None``), else the premise's failure."""
    return verdict if premise is None else premise
