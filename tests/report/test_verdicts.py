"""The verdict rules on hand-made intervals: direction, non-inferiority, range, gating."""

from __future__ import annotations

import pytest

from es_lightning.report.verdicts import (
    NOT_REPRODUCED,
    REPRODUCED,
    UNRESOLVED,
    VACUOUS,
    category,
    direction,
    gated,
    insufficient,
    non_inferior,
    within_range,
)


def _i(low: float, high: float) -> dict:
    return {"estimate": (low + high) / 2, "low": low, "high": high}


def test_direction_needs_the_bound_on_the_claimed_side():
    assert direction(_i(0.1, 0.3), "greater") == REPRODUCED
    assert direction(_i(-0.1, 0.3), "greater") == UNRESOLVED
    assert direction(_i(-0.3, -0.1), "greater") == NOT_REPRODUCED
    assert direction(_i(-0.3, -0.1), "less") == REPRODUCED
    assert direction(_i(0.1, 0.3), "less") == NOT_REPRODUCED


def test_an_exact_zero_is_not_an_increase():
    assert direction(_i(0.0, 0.0), "greater") == NOT_REPRODUCED  # A == B: "A > B" is false
    assert direction(_i(0.0, 0.0), "less") == NOT_REPRODUCED


def test_threshold():
    assert direction(_i(1.9, 2.1), "greater", threshold=1.0) == REPRODUCED  # a ratio above 1
    assert direction(_i(1.9, 2.1), "less", threshold=2.0) == UNRESOLVED  # κ_pair against 2
    assert direction(_i(0.7, 0.8), "less", threshold=2.0) == REPRODUCED
    with pytest.raises(ValueError, match="expect"):
        direction(_i(0, 1), "above")


def test_non_inferiority_with_a_margin():
    assert non_inferior(_i(-0.005, 0.01), margin=0.01) == REPRODUCED  # lower bound −0.5 points > −1
    assert non_inferior(_i(-0.02, 0.01), margin=0.01) == UNRESOLVED
    assert non_inferior(_i(-0.05, -0.02), margin=0.01) == NOT_REPRODUCED
    assert non_inferior(_i(-0.05, -0.02), margin=0.0) == NOT_REPRODUCED


def test_range_is_symmetric():
    assert within_range(_i(0.80, 0.85), 0.78, 0.93) == REPRODUCED
    assert within_range(_i(0.75, 0.85), 0.78, 0.93) == UNRESOLVED  # the estimate inside is not enough
    assert within_range(_i(0.88, 0.95), 0.78, 0.93) == UNRESOLVED  # the same on the upper side
    assert within_range(_i(0.50, 0.52), 0.78, 0.93) == NOT_REPRODUCED
    assert within_range(_i(0.94, 0.99), 0.78, 0.93) == NOT_REPRODUCED


def test_absent_intervals_and_the_premise():
    assert direction(None, "greater").startswith("insufficient data")
    assert gated(VACUOUS, REPRODUCED) == VACUOUS
    assert gated(None, REPRODUCED) == REPRODUCED
    assert category(insufficient("no permuted control")) == "insufficient data"
    assert category("not reproduced (on GRPO's trajectory)") == NOT_REPRODUCED
    assert category("not resolved (one seed)") == category(UNRESOLVED) == "not resolved"
    assert category(VACUOUS) == "vacuous"
