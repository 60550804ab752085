"""ES climbs a known slope: on R(θ) = g·θ + η the mean step is α·σ·g / sd(R).

The project's own pieces run end to end: :meth:`Population.sample` draws the seeds,
:func:`noise_like` the per-tensor directions ε_i (θ is two tensors, 1,500 + 500 = 2,000 numbers),
:func:`member_coefficients` z-scores the rewards and :func:`apply_es_update` takes the step.

Expected value. Member i scores R_i = g·(θ + σε_i) + η_i with ε_i ~ N(0, I) and η_i ~ N(0, s²), so
R_i − E[R] = σ g·ε_i + η_i and sd(R) = sqrt(σ²|g|² + s²). With z_i = (R_i − mean R)/sd(R),
E[z_i ε_i] = σ g / sd(R), hence

    E[Δθ] = α·(1/N)·Σ_i E[z_i ε_i] = α·σ·g / sd(R).

The population's own mean and standard deviation (ddof 0) stand in for E[R] and sd(R), which
scales the expectation by E[s_N]/sd(R) = sqrt(2/N)·Γ(N/2)/Γ((N−1)/2) ≈ 0.976 for N = 32: within
the 10 % the test allows. The remainder of the mean step, orthogonal to g, must be no larger than
the sampling noise of an average over D draws, α·sqrt((d − 1)/(N·D)) for d dimensions.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from es_lightning.es.noise import noise_like
from es_lightning.es.update import Population, apply_es_update, member_coefficients

SHAPES = {"layer.a": (30, 50), "layer.b": (500,)}  # 2,000 parameters in two tensors


def _flat(tensors: dict[str, torch.Tensor]) -> np.ndarray:
    return np.concatenate([tensors[name].double().reshape(-1).numpy() for name in SHAPES])


@pytest.mark.parametrize("reward_noise", [0.0, 3.0])  # s, in units of σ|g|
def test_mean_step_is_alpha_sigma_g_over_sd(reward_noise):
    n, draws, sigma, alpha = 32, 300, 0.01, 0.05
    gen = torch.Generator().manual_seed(0)
    theta0 = {name: torch.randn(shape, generator=gen) for name, shape in SHAPES.items()}
    g = {name: torch.randn(shape, generator=gen) for name, shape in SHAPES.items()}
    g_flat = _flat(g)
    g_norm = float(np.linalg.norm(g_flat))
    s = reward_noise * sigma * g_norm
    sd_r = math.sqrt(sigma**2 * g_norm**2 + s**2)
    rng = np.random.default_rng(1)

    total = np.zeros_like(g_flat)
    for draw in range(draws):
        population = Population.sample(run_seed=5, step=draw, population_size=n, antithetic=False)
        rewards = [
            sum(
                float((g[name] * (theta0[name] + sigma * noise_like(seed, name, shape))).sum())
                for name, shape in SHAPES.items()
            )
            for seed in population.seeds
        ] + s * rng.standard_normal(n)
        theta = {name: t.clone() for name, t in theta0.items()}
        coeffs = member_coefficients(population, rewards, "zscore")
        apply_es_update(theta, coeffs, alpha, n)
        total += _flat(theta) - _flat(theta0)
    mean_step = total / draws

    expected = alpha * sigma * g_flat / sd_r
    along = float(mean_step @ g_flat) / g_norm  # the component along g
    assert along == pytest.approx(float(np.linalg.norm(expected)), rel=0.10)
    across = mean_step - along * g_flat / g_norm  # what is left: sampling noise only
    noise_level = alpha * math.sqrt((g_flat.size - 1) / (n * draws))
    assert np.linalg.norm(across) < 1.1 * noise_level
