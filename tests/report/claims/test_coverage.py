"""Coverage claims on GRPO's trajectory: at matched Pass@1, not against GRPO's end point."""

from __future__ import annotations

import numpy as np

from es_lightning.report.verdicts import NOT_REPRODUCED, REPRODUCED, VACUOUS
from tests.report.claims.reports import base_chances, build, draw, grpo_path, verdicts_of

STEPS = [0, 5, 10, 15, 20, 25, 30]
COVERS = "ES covers more than GRPO at Pass@32"


def _counts(seed: int = 0) -> tuple[dict, np.ndarray, np.random.Generator]:
    rng = np.random.default_rng(seed)
    p = base_chances()
    counts = {"base": draw(p, rng), **grpo_path(p, rng, STEPS[1:], 30), "es_permuted": draw(p, rng)}
    return counts, p, rng


def test_es_equal_to_the_base_covers_more_than_grpo_only_at_the_end_point():
    counts, p, rng = _counts()
    counts["es"] = counts["base"]  # ES did nothing
    report = build(counts, steps=STEPS)
    verdicts = verdicts_of(report)
    claim = next(c for c in report["claims"] if c["claim"] == COVERS)
    assert claim["numbers"]["endpoint"]["low"] > 0  # the untrained model beats GRPO's end point...
    assert verdicts[COVERS] == VACUOUS  # ...which the report does not call a reproduction
    assert verdicts["ES keeps or raises Pass@32"] == VACUOUS


def test_a_learning_es_on_grpos_trajectory_does_not_cover_more():
    counts, p, rng = _counts(1)
    counts["es"] = counts["grpo@10"]  # learned what GRPO learned by update 10, nothing else
    report = build(counts, steps=STEPS)
    verdicts = verdicts_of(report)
    assert report["premise"]["verdict"] == "ES learned"
    claim = next(c for c in report["claims"] if c["claim"] == COVERS)
    assert claim["numbers"]["endpoint"]["low"] > 0  # above GRPO's end point on Pass@32
    assert verdicts[COVERS] == NOT_REPRODUCED  # exactly on the path at its Pass@1


def test_an_es_above_the_trajectory_covers_more():
    counts, p, rng = _counts(2)
    counts["es"] = draw(np.clip(p + 0.06, 0, 1), rng)  # accuracy up, coverage kept
    verdicts = verdicts_of(build(counts, steps=STEPS))
    assert verdicts[COVERS] == REPRODUCED
    assert verdicts["ES keeps or raises Pass@32"] == REPRODUCED


def test_grpo_claims_and_the_missing_trajectory():
    counts, p, rng = _counts(3)
    counts["es"] = draw(np.clip(p + 0.06, 0, 1), rng)
    verdicts = verdicts_of(build(counts))  # no trajectory
    assert verdicts["GRPO raises Pass@1"] == REPRODUCED
    assert verdicts["GRPO lowers Pass@32 below the starting model"] == REPRODUCED
    assert verdicts[COVERS] == "insufficient data: no GRPO trajectory"
    counts["grpo"] = counts["base"]  # a GRPO that did nothing raises nothing
    verdicts = verdicts_of(build(counts))
    assert verdicts["GRPO raises Pass@1"] == NOT_REPRODUCED
    assert verdicts["GRPO lowers Pass@32 below the starting model"] == NOT_REPRODUCED


def test_a_trajectory_point_without_outcomes_is_named():
    counts, p, rng = _counts(4)
    counts["es"] = draw(np.clip(p + 0.06, 0, 1), rng)
    del counts["grpo@15"]
    verdicts = verdicts_of(build(counts, steps=STEPS))
    assert verdicts[COVERS] == "insufficient data: GRPO's trajectory lacks outcomes at grpo@15"
