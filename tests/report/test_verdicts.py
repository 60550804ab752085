"""The verdict rules: intervals (direction, non-inferiority, range, gating), the two tests of a
claim (decide) and Holm's adjustment within families (apply_holm), on hand-worked numbers."""

from __future__ import annotations

import pytest

from es_lightning.report.verdicts import (
    NOT_REPRODUCED,
    ONE_SEED,
    REPRODUCED,
    UNRESOLVED,
    VACUOUS,
    apply_holm,
    category,
    decide,
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
    assert category(ONE_SEED) == category(UNRESOLVED) == "not resolved"
    assert category("not reproduced: ES lies on or below GRPO's path (slow GRPO)") == NOT_REPRODUCED
    assert category(VACUOUS) == "vacuous"


def test_decide_reads_the_reproducing_test_first():
    assert decide(0.01, 0.9, 0.05) == REPRODUCED
    assert decide(0.3, 0.01, 0.05) == NOT_REPRODUCED
    assert decide(0.3, 0.2, 0.05) == UNRESOLVED
    assert decide(0.3, None, 0.05) == UNRESOLVED  # a claim with no refuting test
    assert decide(0.01, 0.01, 0.05) == REPRODUCED  # both reject (e.g. above 0 and below the margin)
    assert decide(0.05, 0.05, 0.05) == UNRESOLVED  # p < α, strictly


def _claim(name: str, family: str, p: float, q: float | None, labels: dict | None = None) -> dict:
    test = {"family": family, "p_reproduce": p, "p_refute": q, "labels": labels or {}}
    return {"claim": name, "verdict": "set before Holm", "test": test}


def test_holm_turns_a_claim_reproduced_alone_into_not_resolved_in_its_family():
    alone = [_claim("a", "f", 0.03, 0.9)]
    apply_holm(alone, 0.95)
    assert alone[0]["verdict"] == REPRODUCED and alone[0]["test"]["m"] == 1
    family = [_claim("a", "f", 0.03, 0.9), _claim("b", "f", 0.5, 0.5), _claim("c", "f", 0.6, 0.4)]
    apply_holm(family, 0.95)
    a = family[0]
    assert a["test"]["m"] == 3 and a["test"]["p_reproduce_holm"] == pytest.approx(0.09)  # 3 × 0.03
    assert a["verdict"] == UNRESOLVED
    # the same claims in other families leave it alone
    apart = [_claim("a", "f", 0.03, 0.9), _claim("b", "g", 0.5, 0.5), _claim("c", "h", 0.6, 0.4)]
    apply_holm(apart, 0.95)
    assert apart[0]["verdict"] == REPRODUCED and apart[0]["test"]["m"] == 1


def test_holm_is_step_down_on_both_tests():
    # p = 0.01, 0.02, 0.04: Holm 0.03, 0.04, 0.04 (all below 0.05); Bonferroni would give 0.06 to the second
    family = [_claim("a", "f", 0.01, None), _claim("b", "f", 0.02, None), _claim("c", "f", 0.04, None)]
    apply_holm(family, 0.95)
    assert [c["test"]["p_reproduce_holm"] for c in family] == pytest.approx([0.03, 0.04, 0.04])
    assert [c["verdict"] for c in family] == [REPRODUCED] * 3
    assert all(c["test"]["p_refute_holm"] is None for c in family)
    # the refuting test is adjusted in its own step-down: 0.01, 0.03, 0.04 → 0.03, 0.06, 0.06
    labels = {NOT_REPRODUCED: "not reproduced: slow"}
    family = [_claim("a", "f", 0.9, 0.01, labels), _claim("b", "f", 0.9, 0.03), _claim("c", "f", 0.9, 0.04)]
    apply_holm(family, 0.95)
    assert [c["test"]["p_refute_holm"] for c in family] == pytest.approx([0.03, 0.06, 0.06])
    assert [c["verdict"] for c in family] == ["not reproduced: slow", UNRESOLVED, UNRESOLVED]


def test_untested_claims_keep_their_verdict_and_take_no_part():
    claims = [{"claim": "one seed", "verdict": ONE_SEED}, _claim("a", "f", 0.03, 0.9)]
    apply_holm(claims, 0.95)
    assert claims[0] == {"claim": "one seed", "verdict": ONE_SEED}
    assert claims[1]["verdict"] == REPRODUCED and claims[1]["test"]["m"] == 1
