"""ES's premise: ES-relative claims are vacuous unless ES beat the base and its permuted control
(seed t and two-level bootstrap, both), and unresolved on one seed."""

from __future__ import annotations

import numpy as np

from es_lightning.report.verdicts import ONE_SEED, VACUOUS
from tests.report.claims.reports import base_chances, build, draw, shifted, verdicts_of

GATED = (
    "ES covers more than GRPO at Pass@32 (matched Pass@1)",
    "ES keeps Pass@32 (against its permuted control)",
    "ES keeps its entropy (against its permuted control)",
    "ES keeps more entropy than GRPO at the same Pass@1",
    "ES drifts further than GRPO (rel-L2)",
    "Most ES updates are tiny",
    "ES's largest updates are in norm / attention",
    "ES's update is functionally sparse (zeroing updates below τ keeps Pass@1)",
)


def _counts(
    es_shift: float, control_shift: float | None, seed: int = 0, seeds: list[int] | None = None
) -> dict:
    rng = np.random.default_rng(seed)
    p = base_chances()
    seeds = seeds or [0, 1, 2]
    counts = {"base": draw(p, rng, seeds), "grpo": draw(shifted(p, 0.05), rng, seeds)}
    counts["es"] = draw(shifted(p, es_shift), rng, seeds)
    if control_shift is not None:
        counts["es_permuted"] = draw(shifted(p, control_shift), rng, seeds)
    return counts


def test_an_es_run_equal_to_the_base_is_vacuous_for_every_es_relative_claim():
    counts = _counts(0.0, 0.0)
    counts["es"] = counts["base"]  # the same evaluation: ES did nothing
    report = build(counts, steps=[0, 30])
    verdicts = verdicts_of(report)
    assert report["premise"]["verdict"] == VACUOUS
    assert report["premise"]["numbers"]["es_minus_base_pass1"]["per_seed"] == [0.0, 0.0, 0.0]
    for name in GATED:
        assert verdicts[name] == VACUOUS, name
    assert not any(c.get("test") for c in report["claims"] if c["claim"] in GATED)  # gated: not in any family
    assert verdicts["GRPO raises Pass@1"] != VACUOUS  # about GRPO alone: not gated


def test_no_permuted_control_is_said_not_passed():
    report = build(_counts(0.08, None), steps=[0, 30])
    verdicts = verdicts_of(report)
    assert report["premise"]["numbers"]["es_minus_base_pass1"]["low"] > 0  # ES did learn
    assert report["premise"]["verdict"] == "insufficient data: no permuted control (method 'es_permuted')"
    assert all(verdicts[name] == report["premise"]["verdict"] for name in GATED)


def test_an_es_no_better_than_its_control_is_vacuous():
    counts = _counts(0.08, None)
    counts["es_permuted"] = counts["es"]  # the shuffled rewards did as well
    report = build(counts)
    verdicts = verdicts_of(report)
    assert report["premise"]["verdict"] == "vacuous: ES did not beat its permuted-reward control"
    assert report["premise"]["numbers"]["es_minus_control_pass1"]["estimate"] == 0.0
    assert verdicts["ES keeps Pass@32 (against its permuted control)"] == report["premise"]["verdict"]


def test_an_es_that_learned_is_judged():
    report = build(_counts(0.08, 0.0), steps=[0, 30])
    verdicts = verdicts_of(report)
    assert report["premise"]["verdict"] == "ES learned"
    numbers = report["premise"]["numbers"]
    assert numbers["es_minus_base_pass1"]["low"] > 0 and numbers["es_minus_control_pass1"]["low"] > 0
    for name in GATED[:2]:
        assert not verdicts[name].startswith(("vacuous", "insufficient data: no permuted")), name
        assert report["claims"][[c["claim"] for c in report["claims"]].index(name)].get("test")


def test_one_seed_resolves_nothing():
    report = build(_counts(0.08, 0.0, seeds=[0]), steps=[0, 30])
    verdicts = verdicts_of(report)
    assert report["premise"]["verdict"] == "vacuous: ES's learning is not resolved on one seed"
    assert verdicts["GRPO raises Pass@1"] == ONE_SEED
    assert verdicts["GRPO lowers Pass@32 below the starting model"] == ONE_SEED
    assert all(verdicts[name] == report["premise"]["verdict"] for name in GATED[:2])
    assert all(f["tested"] == 0 for f in report["families"].values())


def test_without_outcomes_nothing_is_checked():
    report = build(_counts(0.08, 0.0))
    report["outcomes"] = None
    verdicts = verdicts_of(report)
    assert (
        report["premise"]["verdict"] == "insufficient data: no per-problem outcomes to check that es learned"
    )
    assert verdicts["GRPO raises Pass@1"] == "insufficient data: no per-problem outcomes"
    assert verdicts[GATED[1]] == report["premise"]["verdict"]
