"""κ_pair judged against 2 with its standard error over updates; final rewards over seeds."""

from __future__ import annotations

import numpy as np

from es_lightning.report.stats import stat
from es_lightning.report.verdicts import NOT_REPRODUCED, ONE_SEED, REPRODUCED, UNRESOLVED
from tests.report.claims.reports import base_chances, build, draw, verdicts_of


def _report(kappa: dict[str, list[float]], rewards: dict[str, list[float]]) -> dict:
    rng = np.random.default_rng(0)
    counts = {"base": draw(base_chances(), rng)}
    rows = {
        label: {
            "kappa_pair": stat([float(np.mean(v))]).to_json(),
            "kappa_pair_updates": {"0": v},
            "reference": ref,
        }
        for (label, v), ref in zip(kappa.items(), (1.987, 2.7847, 0.8194))
    }
    reward_rows = {
        label: {"final_reward": stat(dict(enumerate(v))).to_json()} for label, v in rewards.items()
    }
    ablations = {
        "kappa_pair": {"rows": rows},
        "population_size": {"rows": reward_rows},
    }
    return build(counts, methods=["es"], ablations=ablations)


def test_kappa_against_two():
    rng = np.random.default_rng(1)
    kappa = {
        "common": list(2.0 + 0.3 * rng.standard_normal(30)),  # uncorrelated pairs: κ ≈ 2
        "independent": list(2.5 + 0.3 * rng.standard_normal(30)),
        "small": list(0.8 + 0.1 * rng.standard_normal(30)),
    }
    verdicts = verdicts_of(_report(kappa, {"8": [0.3, 0.31], "64": [0.35, 0.36]}))
    assert verdicts["κ_pair kappa_pair/common on the paper's side of 2"] == UNRESOLVED  # 1.987 vs κ ≈ 2
    assert verdicts["κ_pair kappa_pair/independent on the paper's side of 2"] == REPRODUCED
    assert verdicts["κ_pair kappa_pair/small on the paper's side of 2"] == REPRODUCED
    assert verdicts["A larger population reaches a higher reward"] == REPRODUCED


def test_kappa_on_the_other_side_and_single_seeds():
    kappa = {"common": [2.5, 2.6, 2.4, 2.5], "independent": [1.0, 1.1, 0.9], "small": [2.2, 2.3]}
    verdicts = verdicts_of(_report(kappa, {"8": [0.3], "64": [0.35]}))
    assert verdicts["κ_pair kappa_pair/common on the paper's side of 2"] == NOT_REPRODUCED
    assert verdicts["κ_pair kappa_pair/independent on the paper's side of 2"] == NOT_REPRODUCED
    assert verdicts["A larger population reaches a higher reward"] == ONE_SEED
