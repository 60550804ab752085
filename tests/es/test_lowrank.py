"""Low-rank ES directions: the factors' generator, the member weights and the update against a
float64 reference built from explicit A, B with a naive loop."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from es_lightning.es.lowrank import LowRankNoise, is_perturbed, lowrank_factors
from es_lightning.es.noise import param_seed
from es_lightning.es.update import Population, member_coefficients
from es_lightning.es.weights import ESWeights

SHAPES = {"embed.weight": (7, 5), "layer.weight": (3, 5), "layer.bias": (3,), "norm.weight": (5,)}


def _params() -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    return {n: torch.randn(s, generator=gen) for n, s in SHAPES.items()}


def _naive_product(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """(A Bᵀ)[i, j] = Σ_k A[i, k]·B[j, k], element by element in float64."""
    out = torch.zeros(a.shape[0], b.shape[0], dtype=torch.float64)
    for i in range(a.shape[0]):
        for j in range(b.shape[0]):
            out[i, j] = sum(float(a[i, k]) * float(b[j, k]) for k in range(a.shape[1]))
    return out


def test_factors_are_the_parameters_generator_a_then_b():
    gen = torch.Generator().manual_seed(param_seed(42, "layer.weight"))
    a_ref = torch.randn((3, 2), generator=gen)
    b_ref = torch.randn((5, 2), generator=gen)
    a, b = lowrank_factors(42, "layer.weight", (3, 5), 2)
    assert torch.equal(a, a_ref) and torch.equal(b, b_ref)
    a2, _ = lowrank_factors(43, "layer.weight", (3, 5), 2)
    assert not torch.equal(a, a2)
    assert is_perturbed((3, 5)) and not is_perturbed((5,))
    with pytest.raises(ValueError, match="not a matrix"):
        lowrank_factors(42, "layer.bias", (3,), 2)
    with pytest.raises(ValueError, match="rank must be >= 1"):
        LowRankNoise(0)


def test_entries_have_unit_variance_at_every_rank():
    for rank in (1, 4):  # per seed the sample variance is mean(a²)·mean(b²)-like: average many seeds
        e = torch.stack([LowRankNoise(rank).noise(s, "w", (16, 16)) for s in range(400)])
        assert float(e.square().mean()) == pytest.approx(1.0, abs=0.1), rank


@pytest.mark.parametrize("normalization", ["zscore", "rank", "none"])
@pytest.mark.parametrize("antithetic", [False, True])
def test_update_equals_the_float64_reference(normalization, antithetic):
    rank, lr = 3, 0.05
    population = Population.sample(run_seed=5, step=2, population_size=6, antithetic=antithetic)
    rewards = np.array([0.1, 0.9, 0.4, 0.4, 0.0, 0.7])
    coeffs = member_coefficients(population, rewards, normalization)
    assert coeffs is not None
    theta = _params()
    weights = ESWeights(
        {n: t.clone() for n, t in theta.items()}, lambda named: None, torch.float32, noise=LowRankNoise(rank)
    )
    norm = weights.update(coeffs, lr, population.size)

    sq = 0.0
    for name, t in theta.items():
        delta = torch.zeros(t.shape, dtype=torch.float64)
        if t.ndim == 2:  # matrices move; vectors stay put
            for seed, c in coeffs.items():
                a, b = lowrank_factors(seed, name, t.shape, rank)
                delta += c * _naive_product(a, b) / math.sqrt(rank)
            delta *= lr / population.size
        expected = t.double() + delta
        torch.testing.assert_close(weights.master[name].double(), expected, rtol=0, atol=1e-6)
        if t.ndim != 2:
            assert torch.equal(weights.master[name], t), name
        sq += float(delta.square().sum())
    assert norm == pytest.approx(math.sqrt(sq), rel=1e-5)


def test_member_weights_are_centre_plus_sigma_a_bt_and_restore_exactly():
    theta = _params()
    written: dict[str, torch.Tensor] = {}
    weights = ESWeights(
        {n: t.clone() for n, t in theta.items()},
        lambda named: written.update(named),
        torch.float32,
        noise=LowRankNoise(2),
    )
    weights.perturb(9, -1.0, 0.1)
    a, b = lowrank_factors(9, "embed.weight", (7, 5), 2)
    expected = theta["embed.weight"].double() - 0.1 * _naive_product(a, b) / math.sqrt(2)
    torch.testing.assert_close(written["embed.weight"].double(), expected, rtol=0, atol=1e-6)
    assert torch.equal(written["norm.weight"], theta["norm.weight"])
    weights.restore()
    weights.serve_centre()
    for name, t in theta.items():
        assert torch.equal(written[name], t)
    with pytest.raises(ValueError, match="does not accumulate"):
        weights.accumulate(True)


def test_directions_for_ranks_equal_the_update():
    """The redrawn directions several ranks exchange are the low-rank ones too."""
    coeffs = {3: 0.5, 8: -1.25}
    theta = _params()
    weights = ESWeights(
        {n: t.clone() for n, t in theta.items()}, lambda named: None, torch.float32, noise=LowRankNoise(2)
    )
    directions = weights.directions(list(SHAPES), coeffs=coeffs)
    weights.update(coeffs, 1.0, 1)
    for name, t in theta.items():
        torch.testing.assert_close(t + directions[name], weights.master[name], rtol=0, atol=1e-6)
