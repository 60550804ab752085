"""The verdict rule: reproduced only when the paired difference exceeds its spread."""

from __future__ import annotations

from es_lightning.report.claims import NOT_MEASURED, ONE_SEED, UNRESOLVED, range_verdict, verdict
from es_lightning.report.stats import stat


def _s(*values: float) -> dict:
    return stat(list(values)).to_json()


def test_difference_beyond_the_spread_in_the_claimed_direction():
    assert verdict(_s(0.10, 0.12, 0.14), "greater") == "reproduced"
    assert verdict(_s(-0.10, -0.12, -0.14), "less") == "reproduced"


def test_difference_beyond_the_spread_against_the_claim():
    assert verdict(_s(-0.10, -0.12, -0.14), "greater") == "not reproduced"


def test_difference_within_the_spread_is_unresolved():
    assert verdict(_s(0.05, -0.03, 0.01), "greater") == UNRESOLVED
    assert verdict(_s(0.0, 0.0), "greater") == UNRESOLVED  # |0| <= 0


def test_one_seed_and_absent_inputs():
    assert verdict(_s(0.5), "greater") == ONE_SEED
    assert verdict(None, "greater") == NOT_MEASURED


def test_threshold():
    assert verdict(_s(1.9, 2.0, 2.1), "greater", threshold=1.0) == "reproduced"  # κ_pair > 1
    assert verdict(_s(0.8, 0.82), "less", threshold=1.0) == "reproduced"
    assert verdict(_s(0.9, 1.2), "greater", threshold=1.0) == UNRESOLVED


def test_range():
    assert range_verdict(_s(0.80, 0.84), 0.78, 0.93) == "reproduced"
    assert range_verdict(_s(0.50, 0.52), 0.78, 0.93) == "not reproduced"
    assert range_verdict(_s(0.70, 0.80), 0.78, 0.93) == UNRESOLVED  # mean 0.75 outside, mean + sd inside
    assert range_verdict(_s(0.8), 0.78, 0.93) == ONE_SEED
