"""Drift claims read ES's excess over its permuted control, paired by seed (seed t, Holm within
``es_mechanism``); GRPO's attribution against the parameter shares (``grpo`` family)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from es_lightning.report.claims.common import Context, verdict_settings
from es_lightning.report.claims.drift import NO_ANALYSIS, drift_claims
from es_lightning.report.stats import stat
from es_lightning.report.verdicts import NOT_REPRODUCED, ONE_SEED, REPRODUCED, UNRESOLVED, VACUOUS, apply_holm
from tests.report.claims.reports import base_chances, build, claim_of, draw, shifted, verdicts_of

RATIO = "ES drifts further than GRPO (rel-L2)"
TINY = "Most ES updates are tiny"
ES_KINDS = "ES's largest updates are in norm / attention"
GRPO_KINDS = "GRPO's largest updates are in embedding / lm_head"
FUNCTIONAL = "ES's update is functionally sparse (zeroing updates below τ keeps Pass@1)"
SHARES = {"attention": 0.25, "mlp": 0.6, "norm": 0.01, "embedding": 0.14}


def _s(values: list[float]) -> dict:
    return stat(dict(enumerate(values))).to_json()


def analysis(
    rel_l2: list[float] | None = None, s_tau: list[float] | None = None, kinds: dict | None = None, **more
) -> dict:
    """One method's ``es-lightning analyze`` summary over seeds 0, 1, 2, ..."""
    out = dict(more)
    if rel_l2:
        out["rel_l2"] = _s(rel_l2)
    if s_tau:
        out["sparsity"] = {"0.0015": _s(s_tau)}
    if kinds:
        out["top_k_by_kind"] = {kind: _s(v) for kind, v in kinds.items()}
    return out


def drift(
    es: dict, control: dict | None = None, grpo: dict | None = None, shares: dict | None = SHARES
) -> dict:
    methods = {"es": es, **({"es_permuted": control} if control is not None else {}), "grpo": grpo or {}}
    return {"methods": methods, "kind_share": shares}


def _learned(seeds: list[int] | None = None) -> dict:
    rng = np.random.default_rng(0)
    p = base_chances()
    seeds = seeds or [0, 1, 2]
    return {
        "base": draw(p, rng, seeds),
        "es_permuted": draw(p, rng, seeds),
        "es": draw(shifted(p, 0.08), rng, seeds),
    }


WALK = analysis(
    rel_l2=[0.030, 0.031, 0.029],
    s_tau=[0.80, 0.82, 0.81],  # inside the paper's 78–93 %: the random walk of ES's step size
    kinds={"norm": [40, 42, 41], "attention": [30, 30, 31], "mlp": [30, 28, 28]},
    null={"rel_l2": _s([0.0299] * 3), "sparsity": {"0.0015": _s([0.81] * 3)}},
)
GRPO = analysis(
    rel_l2=[0.00075, 0.0008, 0.0007],
    kinds={"embedding": [30, 34, 32], "mlp": [50, 46, 48], "attention": [20] * 3},
)


def test_es_equal_to_its_control_is_not_reproduced():
    report = build(_learned(), drift=drift(WALK, WALK, GRPO))
    verdicts = verdicts_of(report)
    assert report["premise"]["verdict"] == "ES learned"
    assert verdicts[RATIO] == NOT_REPRODUCED  # ES / its control = 1, resolved below 1.05
    assert "es/grpo = 40.06 [" in claim_of(report, RATIO)["measured"]  # the paper's ratio alone would pass
    assert verdicts[TINY] == NOT_REPRODUCED  # s_τ 81 % as the paper's, but no sparser than the walk
    assert claim_of(report, TINY)["numbers"]["excess"]["per_seed"] == [0.0, 0.0, 0.0]
    assert verdicts[ES_KINDS] == UNRESOLVED  # exactly the control's share: neither above nor below
    assert verdicts[GRPO_KINDS] == REPRODUCED  # 32 % of the top-k against a 14 % parameter share
    spread = analysis(kinds={"embedding": [1, 0, 2], "mlp": [70, 66, 68], "attention": [29, 34, 30]})
    assert (
        verdicts_of(build(_learned(), drift=drift(WALK, WALK, spread)))[GRPO_KINDS] == NOT_REPRODUCED
    )  # 1 %


def _walks(rng: np.random.Generator, seeds: int = 3) -> dict:
    """ES's and its control's analyses drawn from one random walk (no reward signal)."""

    def one() -> dict:
        top = rng.multinomial(100, [0.05, 0.3, 0.65], size=seeds).T
        return analysis(
            rel_l2=list(0.03 * (1 + 0.02 * rng.standard_normal(seeds))),
            s_tau=list(0.81 + 0.01 * rng.standard_normal(seeds)),
            kinds={"norm": list(top[0]), "attention": list(top[1]), "mlp": list(top[2])},
        )

    return drift(one(), one(), GRPO)


def test_a_random_walk_is_not_reproduced_in_simulation():
    rng = np.random.default_rng(11)
    settings = verdict_settings({})
    reproduced = {RATIO: 0, TINY: 0, ES_KINDS: 0}
    raw_ratio = 0
    runs = 300
    for _ in range(runs):
        claims = drift_claims(Context({"drift": _walks(rng)}, settings, None, None))
        apply_holm(claims, settings.level)
        for c in claims:
            reproduced[c["claim"]] = reproduced.get(c["claim"], 0) + (c["verdict"] == REPRODUCED)
        ratio = claims[0]["numbers"]["ratio"]
        raw_ratio += ratio["low"] > 1  # the paper's ES / GRPO alone
    assert raw_ratio == runs
    for name in (RATIO, TINY, ES_KINDS):  # one-sided tests at 95 %, Holm over the family
        assert reproduced[name] <= 0.05 * runs, name


ABOVE = analysis(
    rel_l2=[0.039, 0.040, 0.039],  # 1.3× its control's
    s_tau=[0.86, 0.87, 0.86],  # 5 points sparser than its control
    kinds={"norm": [60, 61, 62], "attention": [30, 30, 31], "mlp": [10, 9, 7]},
)


def _curve(pruned: list[float], base: float | None) -> dict:
    """ES's sparsity curve: unpruned (τ = 0) and pruned at τ = 1.5e-3, and the base on that engine."""
    curve = {
        "sparsity_curve": {
            "0": {"pass@1": _s([0.40, 0.41, 0.39])},
            "0.0015": {"pass@1": _s(pruned), "s_tau": _s([0.8] * 3)},
        }
    }
    if base is not None:
        curve["sparsity_curve_base"] = {"pass@1": _s([base] * 3)}
    return curve


def test_es_beyond_its_random_walk_is_reproduced():
    es = {**ABOVE, **_curve([0.3995, 0.4095, 0.3895], 0.37)}
    report = build(_learned(), drift=drift(es, WALK, GRPO))
    verdicts = verdicts_of(report)
    for name in (RATIO, TINY, ES_KINDS, FUNCTIONAL):
        assert verdicts[name] == REPRODUCED, name
        assert claim_of(report, name)["test"]["family"] == "es_mechanism"
    assert claim_of(report, RATIO)["test"]["m"] == 4
    excess = claim_of(report, TINY)["numbers"]["excess"]
    assert excess["per_seed"] == pytest.approx([0.06, 0.05, 0.05])
    assert claim_of(report, GRPO_KINDS)["test"]["family"] == "grpo"
    # beyond its walk, but GRPO drifts further: the paper's ratio is refuted
    slow = analysis(rel_l2=[0.05, 0.051, 0.049])
    verdicts = verdicts_of(build(_learned(), drift=drift(ABOVE, WALK, slow)))
    assert verdicts[RATIO] == NOT_REPRODUCED


def _holm_drift(with_attribution: bool) -> dict:
    """ES's s_τ over its control by 2.2, 3.5 and 4.8 points (t = 3.33 above the 1-point margin,
    p ≈ 0.040): reproduced alone in ``es_mechanism``, not beside a second tested claim (ES's top-k
    share of norm / attention 1, −1 and 0 points from its control's)."""
    es = analysis(s_tau=[0.832, 0.855, 0.858])
    control = analysis(s_tau=[0.81, 0.82, 0.81])
    if with_attribution:
        es["top_k_by_kind"] = analysis(
            kinds={"norm": [40, 42, 41], "attention": [31, 29, 31], "mlp": [29, 29, 28]}
        )["top_k_by_kind"]
        control["top_k_by_kind"] = WALK["top_k_by_kind"]
    return drift(es, control, GRPO)


def test_holm_within_the_family_changes_the_verdict():
    alone = build(_learned(), drift=_holm_drift(False))
    verdicts = verdicts_of(alone)
    tiny = claim_of(alone, TINY)["test"]
    t = 0.025 / (0.013 / math.sqrt(3))  # (mean excess − margin) / (sd / √n)
    assert tiny["p_reproduce"] == pytest.approx(0.5 * (1 - t / math.sqrt(2 + t * t)))  # t with 2 df
    assert tiny["m"] == 1 and verdicts[TINY] == REPRODUCED
    assert verdicts[GRPO_KINDS] == REPRODUCED  # another family: no bearing on es_mechanism
    beside = build(_learned(), drift=_holm_drift(True))
    verdicts = verdicts_of(beside)
    tiny = claim_of(beside, TINY)["test"]
    assert tiny["m"] == 2 and tiny["p_reproduce_holm"] == pytest.approx(2 * tiny["p_reproduce"])
    assert verdicts[TINY] == UNRESOLVED and verdicts[ES_KINDS] == UNRESOLVED
    assert beside["families"]["es_mechanism"]["tested"] == 2


def _functional_verdict(pruned: list[float], base: float | None) -> str:
    # only the sparsity curve: the functional claim is alone in its family
    return verdicts_of(build(_learned(), drift=drift(analysis(**_curve(pruned, base)), WALK)))[FUNCTIONAL]


def test_the_functional_claim_needs_the_pruned_model_above_the_base():
    at_base = [0.392, 0.402, 0.382]  # 0.8 points below the unpruned model, back at the base
    assert _functional_verdict(at_base, 0.392) == UNRESOLVED
    assert _functional_verdict(at_base, None) == "insufficient data: no base model on the sparsity curve"
    assert _functional_verdict([0.38, 0.39, 0.37], 0.37) == NOT_REPRODUCED  # lost 2 points (margin 1)
    assert _functional_verdict([0.398, 0.409, 0.389], 0.37) == REPRODUCED  # +2.9 over the base, t = 4.96
    report = build(_learned(), drift=drift(analysis(**_curve([0.398, 0.409, 0.389], 0.37)), WALK))
    verdicts_of(report)
    functional = claim_of(report, FUNCTIONAL)
    assert functional["numbers"]["over_base"]["estimate"] == pytest.approx(0.0287, abs=1e-4)
    assert "− the base on the same engine = +2.9 [" in functional["measured"]
    assert verdicts_of(build(_learned(), drift=drift(WALK, WALK)))[FUNCTIONAL] == (
        "insufficient data: no evaluated thresholded exports"
    )


def test_one_seed_and_missing_inputs():
    one = _learned([0])
    walk = analysis(rel_l2=[0.03], s_tau=[0.8], kinds={"norm": [60], "mlp": [40]})
    report = build(
        one, drift=drift(walk, walk, analysis(rel_l2=[0.001], kinds={"embedding": [60], "mlp": [40]}))
    )
    verdicts = verdicts_of(report)
    assert report["premise"]["verdict"] == "vacuous: ES's learning is not resolved on one seed"
    assert verdicts[GRPO_KINDS] == ONE_SEED and "test" not in claim_of(report, GRPO_KINDS)

    report = build(_learned(), drift=drift(ABOVE, walk))  # one seed of ES's control analysed
    verdicts = verdicts_of(report)
    assert verdicts[TINY] == verdicts[ES_KINDS] == ONE_SEED

    verdicts = verdicts_of(build(_learned(), drift=drift(ABOVE, None, GRPO)))
    no_control = "insufficient data: no analysis of the permuted control 'es_permuted'"
    assert verdicts[RATIO] == verdicts[TINY] == verdicts[ES_KINDS] == no_control
    assert verdicts[GRPO_KINDS] == REPRODUCED

    verdicts = verdicts_of(build(_learned(), drift=drift(ABOVE, WALK, GRPO, shares=None)))
    assert verdicts[GRPO_KINDS] == "insufficient data: no parameter shares by kind (analyze's null block)"
    verdicts = verdicts_of(build(_learned(), drift=drift(ABOVE, analysis(rel_l2=[0.03] * 3), {})))
    assert verdicts[ES_KINDS] == "insufficient data: no top-k attribution of es_permuted"
    assert verdicts[GRPO_KINDS] == verdicts[RATIO] == NO_ANALYSIS  # nothing of GRPO analysed


def test_es_relative_drift_claims_wait_for_the_premise():
    counts = _learned()
    counts["es"] = counts["base"]
    verdicts = verdicts_of(build(counts, drift=drift(ABOVE, WALK, GRPO)))
    assert verdicts[RATIO] == verdicts[TINY] == verdicts[ES_KINDS] == VACUOUS
    assert verdicts[GRPO_KINDS] == REPRODUCED  # about GRPO alone: not gated
