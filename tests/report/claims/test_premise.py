"""ES's premise: ES-relative claims are vacuous unless ES beat the base and its permuted control."""

from __future__ import annotations

import numpy as np

from es_lightning.report.verdicts import VACUOUS
from tests.report.claims.reports import base_chances, build, draw, verdicts_of

GATED = (
    "ES covers more than GRPO at Pass@32",
    "ES keeps or raises Pass@32",
    "ES keeps its entropy",
    "ES drifts further than GRPO (rel-L2)",
    "Most ES updates are tiny",
    "ES's largest updates are in norm / attention",
    "ES's update is functionally sparse (zeroing updates below τ keeps Pass@1)",
)


def _counts(es_shift: float, control_shift: float | None, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    p = base_chances()
    counts = {"base": draw(p, rng), "grpo": draw(np.clip(p + 0.05, 0, 1), rng)}
    counts["es"] = draw(np.clip(p + es_shift, 0, 1), rng)
    if control_shift is not None:
        counts["es_permuted"] = draw(np.clip(p + control_shift, 0, 1), rng)
    return counts


def test_an_es_run_equal_to_the_base_is_vacuous_for_every_es_relative_claim():
    counts = _counts(0.0, 0.0)
    counts["es"] = counts["base"]  # the same evaluation: ES did nothing
    report = build(counts)
    verdicts = verdicts_of(report)
    assert report["premise"]["verdict"] == VACUOUS
    for name in GATED:
        assert verdicts[name] == VACUOUS, name


def test_no_permuted_control_is_said_not_passed():
    report = build(_counts(0.08, None))
    verdicts = verdicts_of(report)
    assert report["premise"]["numbers"]["es_minus_base_pass1"]["low"] > 0  # ES did learn
    assert report["premise"]["verdict"] == "insufficient data: no permuted control (method 'es_permuted')"
    assert all(verdicts[name] == report["premise"]["verdict"] for name in GATED)


def test_an_es_no_better_than_its_control_is_vacuous():
    counts = _counts(0.08, None)
    counts["es_permuted"] = counts["es"]  # the shuffled rewards did as well
    report = build(counts)
    verdicts_of(report)
    assert report["premise"]["verdict"] == "vacuous: ES did not beat its permuted-reward control"


def test_an_es_that_learned_is_judged():
    report = build(_counts(0.08, 0.0))
    verdicts = verdicts_of(report)
    assert report["premise"]["verdict"] == "ES learned"
    assert not any(
        verdicts[name].startswith(("vacuous", "insufficient data: no permuted")) for name in GATED[:2]
    )


def test_without_outcomes_nothing_is_checked():
    report = build(_counts(0.08, 0.0))
    report["outcomes"] = None
    verdicts = verdicts_of(report)
    assert report["premise"]["verdict"].startswith("insufficient data")
    assert verdicts["GRPO raises Pass@1"] == "insufficient data: no per-problem outcomes"
