"""The sequential runs against GRPO's trajectory and GRPO at half the budget."""

from __future__ import annotations

import numpy as np

from es_lightning.report.claims.sequential import ON_PATH
from es_lightning.report.verdicts import REPRODUCED
from tests.report.claims.reports import base_chances, build, draw, grpo_path, verdicts_of

STEPS = [0, 5, 10, 15, 20, 25, 30]


def _name(method: str, k: int) -> str:
    return f"{method} is non-dominated by GRPO's trajectory (Pass@1 vs Pass@{k})"


def _counts(seed: int = 0) -> tuple[dict, np.ndarray, np.random.Generator]:
    rng = np.random.default_rng(seed)
    p = base_chances()
    counts = {"base": draw(p, rng), **grpo_path(p, rng, STEPS[1:], 30)}
    counts["es"] = draw(p, rng)
    return counts, p, rng


def test_es_then_grpo_equal_to_grpo_at_half_the_budget_is_on_the_trajectory():
    counts, p, rng = _counts()
    counts["es_then_grpo"] = counts["grpo@15"]  # the ES half did nothing
    counts["grpo_then_es"] = counts["grpo@15"]
    report = build(counts, steps=STEPS)
    verdicts = verdicts_of(report)
    for method in ("es_then_grpo", "grpo_then_es"):
        for k in (16, 32):
            assert verdicts[_name(method, k)] == ON_PATH == "not reproduced (on GRPO's trajectory)"
    assert set(report["intervals"]["pass_at_k"]) >= {"base", "grpo@5", "grpo@25", "grpo"}  # the path's points
    assert "grpo@5" not in report["intervals"]["difference_to_base"]
    claim = next(c for c in report["claims"] if c["claim"] == _name("es_then_grpo", 32))
    assert "GRPO at update 15" in claim["measured"]
    assert claim["numbers"]["half_pass1"] == {**claim["numbers"]["half_pass1"], "low": 0.0, "high": 0.0}


def test_a_point_between_base_and_grpo_is_not_enough():
    counts, p, rng = _counts(1)
    counts["es_then_grpo"] = draw(sharpen_between(p), rng)
    report = build(counts, steps=STEPS)
    verdicts = verdicts_of(report)
    pareto_like = report["claims"]  # the point lies strictly between base and GRPO on both axes
    assert verdicts[_name("es_then_grpo", 32)] != REPRODUCED, pareto_like


def sharpen_between(p: np.ndarray) -> np.ndarray:
    from tests.report.claims.reports import sharpen

    return sharpen(p, 0.75)  # GRPO's own path at update 15: between base and GRPO's end


def test_a_point_above_the_trajectory_is_reproduced():
    counts, p, rng = _counts(2)
    counts["es_then_grpo"] = draw(np.clip(p + 0.06, 0, 1), rng)
    verdicts = verdicts_of(build(counts, steps=STEPS))
    assert verdicts[_name("es_then_grpo", 32)] == REPRODUCED


def test_without_a_trajectory():
    counts, p, rng = _counts(3)
    counts["es_then_grpo"] = counts["grpo@15"]
    verdicts = verdicts_of(build(counts))
    assert verdicts[_name("es_then_grpo", 16)] == "insufficient data: no GRPO trajectory"
