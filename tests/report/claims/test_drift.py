"""Drift claims: the t interval over seeds, the symmetric range rule, enrichment over the null."""

from __future__ import annotations

import numpy as np
import pytest

from es_lightning.report.claims.drift import wilson_bounds
from es_lightning.report.stats import stat
from es_lightning.report.verdicts import NOT_REPRODUCED, ONE_SEED, REPRODUCED, UNRESOLVED, VACUOUS
from tests.report.claims.reports import base_chances, build, draw, verdicts_of

RATIO = "ES drifts further than GRPO (rel-L2)"
TINY = "Most ES updates are tiny"
ES_KINDS = "ES's largest updates are in norm / attention"
GRPO_KINDS = "GRPO's largest updates are in embedding / lm_head"
FUNCTIONAL = "ES's update is functionally sparse (zeroing updates below τ keeps Pass@1)"
SHARES = {"attention": 0.25, "mlp": 0.6, "norm": 0.01, "embedding": 0.14}


def _s(values: dict[int, float]) -> dict:
    return stat(values).to_json()


def _learned_counts(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    p = base_chances()
    return {"base": draw(p, rng), "es_permuted": draw(p, rng), "es": draw(np.clip(p + 0.08, 0, 1), rng)}


def _drift(
    ratio: list[float], s_tau: list[float], es_kinds: dict, grpo_kinds: dict, curve: dict | None = None
) -> dict:
    seeds = range(len(ratio))
    es = {
        "rel_l2": _s({s: 0.03 for s in seeds}),
        "sparsity": {"0.0015": _s(dict(zip(seeds, s_tau)))},
        "top_k_by_kind": {k: _s(dict(zip(seeds, v))) for k, v in es_kinds.items()},
        "null": {
            "rel_l2": _s({s: 0.0299 for s in seeds}),
            "sparsity": {"0.0015": _s({s: 0.586 for s in seeds})},
        },
    }
    if curve:
        es["sparsity_curve"] = curve
    grpo = {"top_k_by_kind": {k: _s(dict(zip(seeds, v))) for k, v in grpo_kinds.items()}}
    return {
        "methods": {"es": es, "grpo": grpo},
        "ratio": {"numerator": "es", "denominator": "grpo", "value": _s(dict(zip(seeds, ratio)))},
        "kind_share": SHARES,
    }


CURVE = {
    "0": {"pass@1": _s({0: 0.40, 1: 0.41, 2: 0.39})},
    "0.0015": {"pass@1": _s({0: 0.398, 1: 0.409, 2: 0.389}), "s_tau": _s({0: 0.8, 1: 0.8, 2: 0.8})},
}
BASE = {"pass@1": _s({0: 0.37, 1: 0.37, 2: 0.37})}  # the base on the curve's engine


def test_drift_claims_when_es_learned():
    drift = _drift(
        [11.0, 11.5, 12.0],
        [0.80, 0.82, 0.81],
        {"norm": [50, 55, 52], "attention": [20, 20, 22], "mlp": [30, 25, 26]},
        {"embedding": [10, 14, 12], "mlp": [70, 66, 68], "attention": [20, 20, 20]},
        CURVE,
    )
    drift["methods"]["es"]["sparsity_curve_base"] = BASE
    report = build(_learned_counts(), drift=drift)
    verdicts = verdicts_of(report)
    assert report["premise"]["verdict"] == "ES learned"
    assert verdicts[RATIO] == REPRODUCED
    assert verdicts[TINY] == REPRODUCED  # 0.81 ± t·0.01/√3: inside 78–93 %
    assert verdicts[ES_KINDS] == REPRODUCED  # 74 % of the top-k against a 26 % parameter share
    assert verdicts[GRPO_KINDS] == UNRESOLVED  # 12 % against 14 %: not enriched, not resolved below
    assert verdicts[FUNCTIONAL] == REPRODUCED  # lost 0.1 points (margin 1), +2.9 above the base
    functional = next(c for c in report["claims"] if c["claim"] == FUNCTIONAL)
    assert functional["numbers"]["over_base"]["estimate"] == pytest.approx(0.0287, abs=1e-4)
    assert "− the base on the same engine = +2.9 [" in functional["measured"]


def _functional_verdict(pruned: dict[int, float], base: float | None) -> str:
    curve = {**CURVE, "0.0015": {**CURVE["0.0015"], "pass@1": _s(pruned)}}
    drift = _drift([11.0, 11.5, 12.0], [0.8, 0.8, 0.8], {"norm": [60] * 3}, {"embedding": [60] * 3}, curve)
    if base is not None:
        drift["methods"]["es"]["sparsity_curve_base"] = {"pass@1": _s({0: base, 1: base, 2: base})}
    return verdicts_of(build(_learned_counts(), drift=drift))[FUNCTIONAL]


def test_a_pruned_model_back_at_the_base_does_not_keep_the_gain():
    # the unpruned model is 0.8 points above the base; pruned back to it, it is still within the
    # 1-point margin of the unpruned one (the rule before the base was scored: reproduced)
    at_base = {0: 0.392, 1: 0.402, 2: 0.382}
    assert _functional_verdict(at_base, 0.392) == UNRESOLVED
    assert _functional_verdict(at_base, None).startswith(
        "insufficient data: no base model on the sparsity curve"
    )
    assert _functional_verdict({0: 0.38, 1: 0.39, 2: 0.37}, 0.37) == NOT_REPRODUCED  # lost 2 of 3 points
    assert _functional_verdict({0: 0.398, 1: 0.409, 2: 0.389}, 0.37) == REPRODUCED


def test_range_and_attribution_against():
    drift = _drift(
        [11.0, 11.5, 12.0],
        [0.58, 0.59, 0.586],
        {"norm": [0, 1, 0], "attention": [20, 21, 22], "mlp": [80, 78, 78]},
        {"embedding": [1, 0, 2], "mlp": [70, 66, 68], "attention": [29, 34, 30]},
    )
    verdicts = verdicts_of(build(_learned_counts(), drift=drift))
    assert verdicts[TINY] == NOT_REPRODUCED  # the whole interval below 78 %
    assert verdicts[ES_KINDS] == NOT_REPRODUCED  # 21 % of the top-k, 26 % of the parameters
    assert verdicts[GRPO_KINDS] == NOT_REPRODUCED
    assert verdicts[FUNCTIONAL].startswith("insufficient data: no evaluated thresholded exports")


def test_es_relative_drift_claims_wait_for_the_premise():
    counts = _learned_counts()
    counts["es"] = counts["base"]
    drift = _drift(
        [11.0, 11.5, 12.0], [0.80, 0.82, 0.81], {"norm": [60, 60, 60]}, {"embedding": [60, 60, 60]}
    )
    verdicts = verdicts_of(build(counts, drift=drift))
    assert verdicts[RATIO] == verdicts[TINY] == verdicts[ES_KINDS] == VACUOUS
    assert verdicts[GRPO_KINDS] == REPRODUCED  # about GRPO alone: not gated


def test_one_seed_and_no_shares():
    drift = _drift([11.0], [0.8], {"norm": [60]}, {"embedding": [60]})
    drift["kind_share"] = None
    verdicts = verdicts_of(build(_learned_counts(), drift=drift))
    assert verdicts[RATIO] == verdicts[TINY] == ONE_SEED
    assert verdicts[GRPO_KINDS] == "insufficient data: no parameter shares by kind (analyze's null block)"


def test_wilson_bounds_by_hand():
    low, high = wilson_bounds(50, 100, 0.975)  # the two-sided 95 % interval of 50/100
    assert low == pytest.approx(0.4038, abs=1e-4) and high == pytest.approx(0.5962, abs=1e-4)
