"""The random-walk null: hand-worked formulas, the coverage runs' numbers, and a simulated ES walk."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from es_lightning.analysis.null import (
    RandomWalk,
    coefficient_scale,
    null_block,
    null_rel_l2,
    null_sparsity,
    null_statistics,
    top_k_enrichment,
    walk_variance,
    wilson_interval,
)
from es_lightning.analysis.pair import PairAnalyzer
from es_lightning.errors import ConfigError
from es_lightning.es.update import Population, apply_es_update, member_coefficients
from es_lightning.models.registry import resolve_model
from es_lightning.weight_files import iter_weights, weight_files

TAUS = [1e-4, 5e-4, 1e-3, 1.5e-3, 5e-3]


def _profile(weights) -> dict:
    """numel, ‖θ_0‖ overall and per kind of a model, through the analysis' own accumulators (Δ = 0)."""
    analyzer = PairAnalyzer(TAUS, top_k=1)
    for name, theta in weights:
        analyzer.add(name, theta, theta)
    return analyzer.result()


def test_coverage_run_null_from_the_packaged_model():
    """α = 2e-3, N = 32, 27 applied updates on es-lightning/tiny-countdown: the null numbers of the
    coverage runs (D_rel 0.02857; s_τ 4.34/21.45/41.38/58.58/99.35 %)."""
    view = _profile(iter_weights(weight_files(resolve_model("es-lightning/tiny-countdown"))))
    assert view["numel"] == 801_280
    variance, source = walk_variance([RandomWalk(2e-3, 32, 27)], view["numel"])
    assert variance == pytest.approx(27 * 4e-6 / 32, rel=1e-15) and source.startswith("closed form")
    null = null_statistics(view, variance, TAUS)
    assert null["rel_l2"] == pytest.approx(0.02857, abs=5e-6)
    got = [round(100 * null["sparsity"][k], 2) for k in ("0.0001", "0.0005", "0.001", "0.0015", "0.005")]
    assert got == [4.34, 21.45, 41.38, 58.58, 99.35]
    # by kind: sqrt(P_k·v)/‖θ_0,k‖ by hand from the profile
    for kind, n in view["numel_by_kind"].items():
        expected = math.sqrt(n * variance) / view["base_l2_by_kind"][kind]
        assert null["rel_l2_by_kind"][kind] == pytest.approx(expected, rel=1e-12)


def test_formulas_on_hand_worked_numbers():
    assert null_sparsity(1.0, 1.0) == pytest.approx(0.682689492137, abs=1e-12)  # P(|Z| <= 1)
    assert null_sparsity(4.0, 1.96 * 2.0) == pytest.approx(0.95, abs=1e-4)
    assert null_sparsity(0.0, 1e-3) == 1.0
    assert null_rel_l2(0.25, 16, 4.0) == pytest.approx(0.5)  # sqrt(16·0.25)/4
    assert null_rel_l2(0.25, 16, 0.0) is None
    assert coefficient_scale("zscore", "one_point", 32) == 1.0
    assert coefficient_scale("zscore", "antithetic", 32) == pytest.approx(32 / 31)
    assert coefficient_scale("rank", "one_point", 32) is None
    assert coefficient_scale("none", "one_point", 32) is None


def test_wilson_interval_against_the_textbook_formula():
    z = 1.959963984540054
    for successes, trials in [(78, 100), (0, 100), (100, 100), (3, 10)]:
        p = successes / trials
        denom = 1 + z * z / trials
        centre = (p + z * z / (2 * trials)) / denom
        half = z / denom * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials**2))
        low, high = wilson_interval(successes, trials)
        assert low == pytest.approx(max(0.0, centre - half), abs=1e-12)
        assert high == pytest.approx(min(1.0, centre + half), abs=1e-12)
    low, high = wilson_interval(78, 100)
    assert (round(low, 4), round(high, 4)) == (0.6893, 0.85)  # by hand: 0.76964 ± 0.08035


def test_enrichment_is_observed_over_the_parameter_share():
    got = top_k_enrichment({"mlp": 78, "attention": 22}, {"attention": 250, "mlp": 750}, k=100)
    assert list(got) == ["attention", "mlp"]  # KINDS order
    assert got["mlp"]["expected"] == pytest.approx(75.0)
    assert got["mlp"]["ratio"] == pytest.approx(78 / 75)
    low, high = wilson_interval(78, 100)
    assert got["mlp"]["ratio_ci"] == pytest.approx([low / 0.75, high / 0.75])
    assert got["attention"]["ratio"] == pytest.approx(22 / 25)


def test_variance_sources():
    zscore = RandomWalk(1e-3, 8, 10, update_sq_norm_sum=5.0)
    rank = RandomWalk(1e-3, 8, 10, normalization="rank", update_sq_norm_sum=5.0)
    v, source = walk_variance([zscore, zscore], 100)
    assert v == pytest.approx(2 * 10 * 1e-6 / 8) and source.startswith("closed form")  # stages add
    v, source = walk_variance([rank], 100)
    assert v == pytest.approx(5.0 / 100) and "step norms" in source
    paired = RandomWalk(1e-3, 8, 10, estimator="antithetic", update_sq_norm_sum=5.0)
    assert walk_variance([paired], 100)[0] == pytest.approx(5.0 / 100)  # the steps as they were
    unlogged = RandomWalk(1e-3, 8, 10, estimator="antithetic")
    v, source = walk_variance([unlogged], 100)
    assert v == pytest.approx(10 * 1e-6 / 8 * 8 / 7) and "exchangeable" in source
    v, source = walk_variance([zscore, rank], 100)  # an ES stage of each: the variances add
    assert v == pytest.approx(10 * 1e-6 / 8 + 5.0 / 100) and "closed form" in source and "norms" in source
    v, source = walk_variance([RandomWalk(1e-3, 8, 10, normalization="none")], 100)
    assert v is None and "none normalisation" in source and "es/update_norm" in source
    v, source = walk_variance([RandomWalk(1e-3, 8, 10, optimizer="adam")], 100)
    assert v is None and "adam" in source


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"learning_rate": 0.0}, "learning_rate"),
        ({"population_size": 1}, "population_size"),
        ({"applied_updates": -1}, "applied_updates"),
        ({"normalization": "softmax"}, "normalization"),
    ],
)
def test_bad_walk_settings_are_named(kwargs, match):
    settings = {"learning_rate": 1e-3, "population_size": 8, "applied_updates": 3, **kwargs}
    with pytest.raises(ConfigError, match=match):
        RandomWalk(**settings)


def test_antithetic_coefficient_mean_over_random_rewards():
    """E[Σ_j c_j²]/N = N/(N−1) for antithetic pairs of exchangeable rewards (naive loop)."""
    rng = np.random.default_rng(0)
    n, draws = 8, 5_000
    population = Population.sample(0, 0, n, antithetic=True)
    totals = []
    for _ in range(draws):
        coeffs = member_coefficients(population, rng.normal(size=n))
        totals.append(sum(c * c for c in coeffs.values()) / n)
    mean, se = np.mean(totals), np.std(totals) / math.sqrt(draws)
    assert abs(mean - n / (n - 1)) < 3 * se
    assert abs(mean - 1.0) > 10 * se  # the one-point c = 1 would be refused


SHAPES = {
    "model.embed_tokens.weight": (64, 256),
    "model.layers.0.self_attn.q_proj.weight": (256, 256),
    "model.layers.0.mlp.up_proj.weight": (512, 256),
    "model.layers.0.input_layernorm.weight": (256,),
    "model.norm.weight": (256,),
}


def test_simulated_es_walk_matches_the_null():
    """The project's own noise and update on ~230k coordinates with random 0/1 rewards: D_rel within
    1% and every s_τ within 0.5 points of the null; D_rel per kind within 5 standard errors."""
    rng = np.random.default_rng(1)
    gen = torch.Generator().manual_seed(0)
    scales = {"embed": 0.02, "q_proj": 0.05, "up_proj": 0.03, "norm": 0.0}
    theta0 = {}
    for name, shape in SHAPES.items():
        scale = next(s for key, s in scales.items() if key in name)
        theta0[name] = torch.randn(shape, generator=gen) * scale + (1.0 if scale == 0.0 else 0.0)
    theta = {name: t.clone() for name, t in theta0.items()}
    lr, n, steps, applied, sq_norms = 2e-3, 32, 27, 0, 0.0
    for step in range(steps):
        population = Population.sample(7, step, n, antithetic=False)
        rewards = rng.binomial(1, 0.05, size=n).astype(float)  # all zero about 1 time in 5: skipped
        coeffs = member_coefficients(population, rewards)
        if coeffs is None:
            continue
        applied += 1
        sq_norms += apply_es_update(theta, coeffs, lr, n) ** 2
    assert 0 < applied < steps  # the walk had skipped updates to leave out
    analyzer = PairAnalyzer(TAUS, top_k=100)
    for name in SHAPES:
        analyzer.add(name, theta0[name], theta[name])
    measured = analyzer.result()
    walk = RandomWalk(lr, n, applied, update_sq_norm_sum=sq_norms)
    block = null_block(measured, [walk], TAUS)
    assert block["modelled"] and block["variance"] == pytest.approx(applied * lr**2 / n)
    assert abs(block["measured_over_null"]["rel_l2"] - 1) < 0.01
    for kind, ratio in block["measured_over_null"]["rel_l2_by_kind"].items():
        assert abs(ratio - 1) < 5 / math.sqrt(2 * measured["numel_by_kind"][kind]), kind  # 5 SE
    for tau in block["sparsity"]:
        assert abs(measured["sparsity"][tau] - block["sparsity"][tau]) < 0.005, tau
    assert block["rel_l2_from_update_norms"] == pytest.approx(measured["rel_l2"], rel=0.01)
    # a walk counted with every update (skips included) is off by more than the bound
    wrong = null_block(measured, [RandomWalk(lr, n, steps)], TAUS)
    assert abs(wrong["measured_over_null"]["rel_l2"] - 1) > 0.01
