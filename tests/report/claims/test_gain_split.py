"""Where each method's Pass@1 gain lies: on the problems the base solves greedily or on the others."""

from __future__ import annotations

import numpy as np
import pytest

from es_lightning.report.evidence import BOTH
from es_lightning.report.markdown import _gain_split
from tests.report.claims.reports import (
    SEEDS,
    M,
    base_chances,
    build,
    draw,
    grpo_path,
    judged,
    sharpen,
    shifted,
)


def _report(base_once: bool = False) -> tuple[dict, np.ndarray]:
    rng = np.random.default_rng(8)
    p = base_chances()
    counts = {
        "base": draw(p, rng, [0] if base_once else SEEDS),
        **grpo_path(p, rng, steps=[0, 15, 30]),  # grpo@15: a path point, no row of its own
        "es": draw(shifted(p, 0.05), rng),
        "base@T0.4": draw(sharpen(p, 1.0), rng, [0]),
    }
    report = build(counts)
    greedy = p > 0.4  # the base's greedy answer is right where its samples mostly are
    report["outcomes"]["greedy"] = {"base": {"0": greedy.tolist()}}
    return judged(report), greedy


def _plain(report: dict, method: str, mask: np.ndarray, seeds: list[int]) -> list[float]:
    """Per seed, the mean Pass@1 change over the masked problems (Pass@1 = c / M)."""
    counts = report["outcomes"]["counts"]
    base = counts["base"]
    return [
        float(np.mean((np.array(counts[method][str(s)]) - np.array(base.get(str(s), base["0"])))[mask]) / M)
        for s in seeds
    ]


def test_the_split_equals_a_plain_computation():
    report, greedy = _report()
    split = report["gain_split"]
    assert set(split) == {"es", "grpo"}  # not the base, its temperatures or the path's points
    for method in ("es", "grpo"):
        row = split[method]
        assert (row["n_solved"], row["n_unsolved"]) == (int(greedy.sum()), int((~greedy).sum()))
        for name, mask in (("solved", greedy), ("unsolved", ~greedy)):
            per_seed = _plain(report, method, mask, SEEDS)
            assert row[name]["per_seed"] == pytest.approx(per_seed)
            assert row[name]["estimate"] == pytest.approx(np.mean(per_seed))
            assert row[name]["kind"] == BOTH and row[name]["n"] == len(SEEDS)  # n: the seeds
    # GRPO sharpens: it gains where the base is already right and loses elsewhere; ES gains on both
    assert split["grpo"]["solved"]["low"] > 0 > split["grpo"]["unsolved"]["high"]
    assert split["es"]["solved"]["low"] > 0 and split["es"]["unsolved"]["low"] > 0
    table = "\n".join(_gain_split(report))
    assert "## Where the Pass@1 gain lies" in table and "| grpo |" in table


def test_a_base_evaluated_once_and_no_greedy_record():
    report, greedy = _report(base_once=True)
    row = report["gain_split"]["es"]
    assert row["solved"]["per_seed"] == pytest.approx(_plain(report, "es", greedy, SEEDS))  # every seed
    del report["outcomes"]["greedy"]
    assert judged(report)["gain_split"] is None
    report["outcomes"]["greedy"] = {"base": {"0": greedy[:-1].tolist()}}  # not the report's problems
    assert judged(report)["gain_split"] is None
