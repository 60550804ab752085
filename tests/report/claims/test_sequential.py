"""The sequential runs against GRPO's trajectory and GRPO at half the budget (``sequential`` family)."""

from __future__ import annotations

import numpy as np

from es_lightning.report.claims.sequential import HALF_DOMINATES, ON_PATH
from es_lightning.report.verdicts import REPRODUCED, UNRESOLVED
from tests.report.claims.reports import (
    STEPS,
    base_chances,
    build,
    claim_of,
    draw,
    grpo_path,
    sharpen,
    shifted,
    verdicts_of,
)


def _name(method: str, k: int) -> str:
    return f"{method} is non-dominated by GRPO's trajectory (Pass@1 vs Pass@{k})"


def _counts(seed: int = 0, problems: int = 200, seeds: list[int] | None = None, shape=(0.8, 1.96)):
    seeds = seeds or [0, 1, 2]
    rng = np.random.default_rng(seed)
    p = base_chances(seed, problems, shape)
    counts = {"base": draw(p, rng, seeds), **grpo_path(p, rng, seeds=seeds), "es": draw(p, rng, seeds)}
    return counts, p, rng, seeds


def test_runs_on_and_below_the_trajectory():
    counts, p, rng, seeds = _counts(problems=1500, seeds=[0, 1, 2, 3], shape=(2.0, 3.0))
    counts["es_then_grpo"] = counts["grpo@15"]  # the ES half did nothing: GRPO at half the budget
    hardest = np.where(
        p < np.quantile(p, 0.1), 0.0, sharpen(p, 0.75)
    )  # GRPO at 15, minus its hardest problems
    counts["grpo_then_es"] = draw(hardest, rng, seeds)
    report = build(counts, steps=STEPS, pareto_ks=[32])
    verdicts = verdicts_of(report)
    on = claim_of(report, _name("es_then_grpo", 32))
    assert on["numbers"]["matched"]["estimate"] == 0.0  # a vertex of the path
    assert verdicts[_name("es_then_grpo", 32)] == UNRESOLVED  # not above it; the refuting test is Δ < 0
    assert "− GRPO at update 15: Pass@1 +0.0 [+0.0, +0.0], Pass@32 +0.0 [+0.0, +0.0]" in on["measured"]
    assert verdicts[_name("grpo_then_es", 32)] == ON_PATH == "not reproduced (on GRPO's trajectory)"
    below = claim_of(report, _name("grpo_then_es", 32))
    assert below["numbers"]["matched"]["high"] < 0 and below["test"]["family"] == "sequential"
    assert below["test"]["m"] == 2
    assert set(report["intervals"]["pass_at_k"]) >= {"base", "grpo@5", "grpo@25", "grpo"}  # the path's points
    assert "grpo@5" not in report["intervals"]["difference_to_base"]


def test_a_point_between_base_and_grpo_on_the_path_is_not_enough():
    counts, p, rng, _ = _counts(1)
    counts["es_then_grpo"] = draw(sharpen(p, 0.75), rng)  # strictly between base and GRPO on both axes
    verdicts = verdicts_of(build(counts, steps=STEPS))
    assert verdicts[_name("es_then_grpo", 16)] != REPRODUCED
    assert verdicts[_name("es_then_grpo", 32)] != REPRODUCED


def test_a_point_above_the_trajectory_is_reproduced():
    counts, p, rng, _ = _counts(2)
    counts["es_then_grpo"] = draw(shifted(p, 0.025), rng)
    report = build(counts, steps=STEPS)
    verdicts = verdicts_of(report)
    assert verdicts[_name("es_then_grpo", 16)] == verdicts[_name("es_then_grpo", 32)] == REPRODUCED
    assert report["families"]["sequential"]["tested"] == 2


def test_grpo_at_half_the_budget_dominating_the_run():
    rng = np.random.default_rng(3)
    p = base_chances()
    collapsed = draw(sharpen(p, 1.5), rng)  # Pass@1 up 4 points, Pass@32 down 20
    counts = {"base": draw(p, rng), "es": draw(p, rng)}
    counts.update({f"grpo@{s}": collapsed for s in (5, 10, 20, 25)} | {"grpo": collapsed})
    counts["grpo@15"] = draw(shifted(p, 0.1), rng)  # a path that winds: at update 15 better on both axes
    counts["es_then_grpo"] = draw(shifted(p, 0.03), rng)
    report = build(counts, steps=STEPS)
    verdicts = verdicts_of(report)
    claim = claim_of(report, _name("es_then_grpo", 32))
    assert claim["numbers"]["matched"]["low"] > 0  # above the path where the path has its Pass@1
    assert verdicts[_name("es_then_grpo", 32)] == HALF_DOMINATES


def test_without_a_trajectory_or_its_half_budget_point():
    counts, p, rng, _ = _counts(3)
    counts["es_then_grpo"] = counts["grpo@15"]
    verdicts = verdicts_of(build(counts))
    assert verdicts[_name("es_then_grpo", 16)] == "insufficient data: no GRPO trajectory"
    steps = [0, 10, 20, 30]  # no checkpoint at update 15
    report = build(
        {n: c for n, c in counts.items() if n not in ("grpo@5", "grpo@15", "grpo@25")}, steps=steps
    )
    verdicts_of(report)
    assert (
        "GRPO at half the budget (update 15) is not on the trajectory"
        in claim_of(report, _name("es_then_grpo", 32))["measured"]
    )
