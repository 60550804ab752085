"""Pass@K claims: GRPO's, ES's at matched Pass@1 on GRPO's path (the primary claim) and on the
base's temperature path, and "ES keeps Pass@K" against its permuted control."""

from __future__ import annotations

import numpy as np
import pytest

from es_lightning.report.claims.coverage import SHARPENING, SLOW_GRPO
from es_lightning.report.verdicts import NOT_REPRODUCED, REPRODUCED, UNRESOLVED, VACUOUS
from tests.report.claims.reports import (
    STEPS,
    base_chances,
    build,
    claim_of,
    draw,
    grpo_path,
    path_names,
    sharpen,
    shifted,
    verdicts_of,
)

PRIMARY = "ES covers more than GRPO at Pass@32 (matched Pass@1)"
SHARPER = "ES covers more than the base's temperature path at Pass@{k} (matched Pass@1)"
KEEPS = "ES keeps Pass@32 (against its permuted control)"
TEMPERATURES = {"base@T0.8": 0.5, "base@T0.6": 1.0, "base@T0.4": 1.5}
"""The base sampled cooler, evaluated once each: sharpened as GRPO's path is, without training."""


def _counts(seed: int = 0) -> tuple[dict, np.ndarray, np.random.Generator]:
    rng = np.random.default_rng(seed)
    p = base_chances()
    counts = {"base": draw(p, rng), **grpo_path(p, rng), "es_permuted": draw(p, rng)}
    return counts, p, rng


def study(
    es_strength: float | None, problems: int, seeds: list[int], seed: int = 0, temperatures: bool = False
) -> dict:
    """A study on problems of middling difficulty (Beta(2, 3)) whose ES lies exactly on GRPO's
    path (its chances sharpened by ``es_strength``, between GRPO's updates 10 and 15), drawn anew."""
    rng = np.random.default_rng(seed)
    p = base_chances(seed, problems, shape=(2.0, 3.0))
    counts = {
        "base": draw(p, rng, seeds),
        **grpo_path(p, rng, seeds=seeds),
        "es_permuted": draw(p, rng, seeds),
    }
    counts["es"] = draw(sharpen(p, es_strength), rng, seeds)
    blocks = {}
    if temperatures:
        counts["base"] = draw(p, rng, [0])  # evaluated once: paired with every seed
        counts.update({name: draw(sharpen(p, s), rng, [0]) for name, s in TEMPERATURES.items()})
        blocks["sharpening"] = {"points": ["base", *TEMPERATURES]}
    return build(counts, steps=STEPS, pareto_ks=[32], **blocks)


def test_grpo_claims():
    counts, p, rng = _counts(3)
    counts["es"] = draw(shifted(p, 0.025), rng)
    report = build(counts)
    verdicts = verdicts_of(report)
    assert verdicts["GRPO raises Pass@1"] == REPRODUCED
    assert verdicts["GRPO lowers Pass@32 below the starting model"] == REPRODUCED
    assert claim_of(report, "GRPO raises Pass@1")["test"]["family"] == "grpo"
    counts["grpo"] = draw(shifted(p, -0.05), rng)  # a GRPO that got worse at everything
    verdicts = verdicts_of(build(counts))
    assert verdicts["GRPO raises Pass@1"] == NOT_REPRODUCED
    assert verdicts["GRPO lowers Pass@32 below the starting model"] == REPRODUCED


def test_es_above_grpos_path_reproduces_the_primary_claim():
    counts, p, rng = _counts(2)
    counts["es"] = draw(shifted(p, 0.025), rng)  # as accurate as GRPO midway, with more coverage
    report = build(counts, steps=STEPS)
    verdicts = verdicts_of(report)
    assert report["premise"]["verdict"] == "ES learned"
    assert verdicts[PRIMARY] == REPRODUCED
    primary = claim_of(report, PRIMARY)
    assert primary["test"]["family"] == "primary" and primary["test"]["m"] == 1
    assert primary["numbers"]["matched"]["low"] > 0
    assert report["families"]["primary"]["tested"] == 1


def test_es_on_grpos_path_is_slow_grpo_when_the_noise_is_small():
    report = study(0.6, problems=1500, seeds=[0, 1, 2, 3])
    verdicts = verdicts_of(report)
    assert report["premise"]["verdict"] == "ES learned"
    assert verdicts[PRIMARY] == SLOW_GRPO and SLOW_GRPO.startswith(NOT_REPRODUCED)
    matched = claim_of(report, PRIMARY)["numbers"]["matched"]
    assert abs(matched["estimate"]) < 0.005 and matched["high"] < 0.02  # below the 2-point margin
    assert (
        "; − grpo at the end points = +" in claim_of(report, PRIMARY)["measured"]
    )  # the end point would mislead


def test_es_on_grpos_path_is_not_resolved_when_the_noise_is_large():
    report = study(0.6, problems=50, seeds=[0, 1, 2])
    verdicts = verdicts_of(report)
    assert report["premise"]["verdict"] == "ES learned"
    assert verdicts[PRIMARY] == UNRESOLVED
    matched = claim_of(report, PRIMARY)["numbers"]["matched"]
    assert matched["low"] <= 0 < 0.02 <= matched["high"]


def test_es_equal_to_the_base_is_above_grpos_end_point_and_vacuous():
    counts, p, rng = _counts()
    counts["es"] = counts["base"]  # ES did nothing
    report = build(counts, steps=STEPS)
    verdicts = verdicts_of(report)
    claim = claim_of(report, PRIMARY)
    end = claim["measured"].split("− grpo at the end points = ")[1]
    assert end.startswith("+") and float(end.split("[")[1].split(",")[0]) > 0  # above GRPO's end point...
    assert verdicts[PRIMARY] == VACUOUS and "test" not in claim  # ...which is no reproduction
    assert verdicts[KEEPS] == VACUOUS


def test_primary_k_and_the_other_paths():
    counts, p, rng = _counts(5)
    counts["es"] = draw(shifted(p, 0.025), rng)
    counts.update({n.replace("grpo", "grpo_hot"): c for n, c in grpo_path(p, rng).items()})
    paths = {m: {"points": path_names(STEPS, m), "steps": STEPS} for m in ("grpo", "grpo_hot")}
    report = build(counts, methods=["es", "grpo", "es_permuted"], verdicts={"primary_k": 16})
    report["trajectory"] = {"method": "grpo", "paths": paths}
    verdicts = verdicts_of(report)
    families = {c["claim"]: c["test"]["family"] for c in report["claims"] if c.get("test")}
    assert families["ES covers more than GRPO at Pass@16 (matched Pass@1)"] == "primary"
    assert families[PRIMARY] == "coverage"
    assert families["ES covers more than GRPO (grpo_hot) at Pass@16 (matched Pass@1)"] == "coverage"
    assert verdicts["ES covers more than GRPO (grpo_hot) at Pass@16 (matched Pass@1)"] == REPRODUCED


def test_the_base_temperature_path():
    report = study(0.75, problems=1500, seeds=[0, 1, 2, 3], temperatures=True)  # ES is the base, cooler
    verdicts = verdicts_of(report)
    assert report["premise"]["verdict"] == "ES learned"
    assert verdicts[SHARPER.format(k=32)] == SHARPENING
    sharper = claim_of(report, SHARPER.format(k=32))
    assert sharper["test"]["family"] == "coverage" and sharper["numbers"]["matched"]["high"] < 0.02
    assert len(sharper["numbers"]["matched"]["per_seed"]) == 4  # one temperature evaluation, every seed

    counts, p, rng = _counts(1)
    counts["es"] = draw(shifted(p, 0.025), rng)
    counts.update({name: draw(sharpen(p, s), rng, [0]) for name, s in TEMPERATURES.items()})
    report = build(counts, steps=STEPS, sharpening={"points": ["base", *TEMPERATURES]})
    verdicts = verdicts_of(report)
    assert verdicts[SHARPER.format(k=16)] == verdicts[SHARPER.format(k=32)] == REPRODUCED
    assert "base@T0.4" in report["intervals"]["pass_at_k"]
    assert "base@T0.4" not in report["intervals"]["difference_to_base"]
    report["sharpening"] = {"points": ["base", "base@T0.2"]}
    assert verdicts_of(report)[SHARPER.format(k=32)] == "insufficient data: no outcomes of base@T0.2"


def _keeps(control_from_es) -> dict:
    """ES sharpened (Pass@1 up, Pass@32 below the base) and a control derived from ES's counts."""
    rng = np.random.default_rng(6)
    p = base_chances()
    counts = {"base": draw(p, rng), "grpo": draw(sharpen(p, 1.5), rng), "es": draw(sharpen(p, 1.5), rng)}
    counts["es_permuted"] = {s: control_from_es(c) for s, c in counts["es"].items()}
    return build(counts)


def test_keeps_pass_at_k_reads_es_minus_its_control():
    # the control solves the same problems at least once (the same Pass@32) but less often
    report = _keeps(lambda c: np.where(c >= 8, c // 2, c))
    verdicts = verdicts_of(report)
    assert report["premise"]["verdict"] == "ES learned"
    keeps = claim_of(report, KEEPS)
    assert (
        keeps["numbers"]["difference"]["estimate"] == 0.0
        and keeps["numbers"]["difference"]["per_seed"] == [0.0] * 3
    )
    assert verdicts[KEEPS] == REPRODUCED
    over_base = report["intervals"]["difference_to_base"]["es"]["32"]
    assert over_base["high"] < -0.01  # below the base: a rule against the base would not reproduce it
    # a control that reaches problems ES never solves: ES lost coverage its random walk kept
    report = _keeps(lambda c: np.where(c == 0, 1, np.where(c >= 8, c // 2, c)))
    verdicts = verdicts_of(report)
    assert report["premise"]["verdict"] == "ES learned"
    assert claim_of(report, KEEPS)["numbers"]["difference"]["high"] < -0.01
    assert verdicts[KEEPS] == NOT_REPRODUCED


def test_missing_trajectory_and_missing_points_are_named():
    counts, p, rng = _counts(4)
    counts["es"] = draw(shifted(p, 0.025), rng)
    assert verdicts_of(build(counts))[PRIMARY] == "insufficient data: no GRPO trajectory"
    del counts["grpo@15"]
    verdicts = verdicts_of(build(counts, steps=STEPS))
    assert verdicts[PRIMARY] == "insufficient data: the grpo trajectory lacks outcomes at grpo@15"


@pytest.mark.parametrize("k", [16, 32])
def test_matched_numbers_equal_the_evidence_on_the_path(k):
    from es_lightning.report.intervals import ProblemBootstrap
    from es_lightning.report.matched import matched_difference

    counts, p, rng = _counts(7)
    counts["es"] = draw(shifted(p, 0.025), rng)
    report = build(counts, steps=STEPS)
    verdicts_of(report)
    settings = report["config"]["verdicts"]
    boot = ProblemBootstrap(
        report["outcomes"], settings["level"], settings["bootstrap_resamples"], settings["bootstrap_seed"]
    )
    evidence, _ = matched_difference(boot, "es", path_names(STEPS), k)
    matched = claim_of(report, f"ES covers more than GRPO at Pass@{k} (matched Pass@1)")["numbers"]["matched"]
    assert matched["estimate"] == pytest.approx(evidence.estimate)
    assert matched["per_seed"] == pytest.approx(list(evidence.per_seed))
