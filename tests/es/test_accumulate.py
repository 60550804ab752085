"""The accumulated ES update against the redrawn one and a float64 reference, on a tiny model's tensors.

Error bounds (u = 2⁻²⁴, γ_k = k·u/(1 − k·u)), derived in :mod:`es_lightning.es.accumulate`:

* redraw: D = Σ_s c_s ε_s summed in float32 over S seeds with float32-rounded coefficients is
  within γ_{S+2}·Σ_s |c_s||ε_s| of the exact sum;
* accumulate: A = Σ_j a_j ε_j and B = Σ_j b_j ε_j over F folds are each within γ_{F+2}·Σ_j |·||ε_j|,
  and D = A − (μ − c)·B adds at most 3u·(|A| + |μ − c||B|) (the rounded shift, its product and the
  subtraction), all divided by s when compared in units of z.

Both are checked element by element against float64 loops, and against each other; a wrong μ is
shown to break the bound, so the check can fail.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from es_lightning.es.noise import noise_like
from es_lightning.es.normalize import normalize_rewards
from es_lightning.es.update import Population, member_coefficients
from es_lightning.es.weights import ESWeights
from es_lightning.weight_files import load_weights, weight_files

U = 2.0**-24


def _gamma(k: int) -> float:
    return k * U / (1 - k * U)


@pytest.fixture(scope="module")
def theta(tiny_model_path) -> dict[str, torch.Tensor]:
    """The tiny model's real fp32 weights."""
    return load_weights(weight_files(str(tiny_model_path)), device="cpu")


def _consume(named) -> None:
    """A writer that reads every tensor and keeps none (a serving model is not needed here)."""
    for _ in named:
        pass


def _weights(theta, optimizer="sgd") -> ESWeights:
    return ESWeights({n: t.clone() for n, t in theta.items()}, _consume, torch.float32, optimizer)


def _evaluate(weights: ESWeights, population: Population, rewards, sigma=0.01) -> None:
    """What the strategy does per member while accumulating: perturb, (generate), record R_i."""
    weights.accumulate(True)
    for (seed, sign), reward in zip(population.members, rewards, strict=True):
        weights.perturb(seed, sign, sigma)
        weights.record_reward(float(reward))


def _reference(theta, population: Population, rewards, normalization="zscore"):
    """Per tensor, in float64: the direction Σ_i sign_i z_i ε_i, and the two error bounds (in units
    of z) of the redrawn and the accumulated direction (see the module docstring)."""
    r = np.asarray(rewards, dtype=np.float64)
    z = normalize_rewards(r, normalization)
    mean, std = (0.0, 1.0) if normalization == "none" else (r.mean(), r.std())
    coeffs = member_coefficients(population, r, normalization)
    c = r[0]  # the first recorded reward (one rank)
    folds: dict[int, list[float]] = {}  # per seed: [a, b]
    for (seed, sign), ri in zip(population.members, r, strict=True):
        a_b = folds.setdefault(seed, [0.0, 0.0])
        a_b[0] += sign * (ri - c)
        a_b[1] += sign
    shift = mean - c
    out = {}
    for name, t in theta.items():
        eps = {s: noise_like(s, name, t.shape).double() for s in coeffs}
        exact = sum(zi * sign * eps[seed] for (seed, sign), zi in zip(population.members, z, strict=True))
        redraw = _gamma(len(coeffs) + 2) * sum(abs(cs) * eps[s].abs() for s, cs in coeffs.items())
        sum_a = sum(a * eps[s] for s, (a, _) in folds.items())
        sum_b = sum(b * eps[s] for s, (_, b) in folds.items())
        acc = _gamma(len(folds) + 2) * sum(
            (abs(a) + abs(shift) * abs(b)) * eps[s].abs() for s, (a, b) in folds.items()
        )
        acc = (acc + 3 * U * (sum_a.abs() + abs(shift) * sum_b.abs())) / std
        out[name] = (exact, redraw, acc)
    return out, coeffs, mean, std


CASES = {
    "spread": ([0.25, 0.5, 0.0, 0.75, 0.5, 1.0, 0.25, 0.5], False),
    "near_one": ([0.97, 0.96, 0.97, 0.98, 0.97, 0.99, 0.96, 0.97], False),  # μ/s ≈ 100
    "antithetic": ([0.25, 0.5, 0.0, 0.75, 0.5, 1.0, 0.25, 0.25], True),
}


@pytest.mark.parametrize("case", list(CASES))
def test_accumulated_direction_matches_redraw_within_the_float32_bound(theta, case):
    rewards, antithetic = CASES[case]
    population = Population.sample(5, 2, len(rewards), antithetic)
    reference, coeffs, mean, std = _reference(theta, population, rewards)
    accumulating = _weights(theta)
    _evaluate(accumulating, population, rewards)
    names = list(theta)
    accumulated = accumulating.directions(names, mean=mean)
    redrawn = _weights(theta).directions(names, coeffs=coeffs)
    worst = 0.0
    for name in names:
        exact, redraw_bound, acc_bound = reference[name]
        acc = accumulated[name].double() / std
        red = redrawn[name].double()
        assert ((red - exact).abs() <= redraw_bound).all(), name
        assert ((acc - exact).abs() <= acc_bound).all(), name
        assert ((acc - red).abs() <= acc_bound + redraw_bound).all(), name
        worst = max(worst, float((acc - red).abs().max()))
    assert 0 < worst < 1e-4  # float32 summation order only: never identical, never far


def test_a_wrong_mean_breaks_the_bound(theta):
    """The bound is tight enough to catch an error in μ of 1e-3·s."""
    rewards, _ = CASES["spread"]
    population = Population.sample(5, 2, len(rewards), False)
    reference, _, mean, std = _reference(theta, population, rewards)
    weights = _weights(theta)
    _evaluate(weights, population, rewards)
    name = "model.layers.0.mlp.up_proj.weight"
    wrong = weights.directions([name], mean=mean + 1e-3 * std)[name].double() / std
    exact, _, bound = reference[name]
    assert ((wrong - exact).abs() > bound).any()


def test_the_first_reward_as_reference_keeps_close_rewards_accurate(theta):
    """With rewards near 0.97 (μ/s ≈ 100), summing R_i·ε_i and subtracting μ·Σε_i (reference c = 0)
    cancels large numbers: its error is far outside the bound that c = the first reward meets."""
    rewards, _ = CASES["near_one"]
    population = Population.sample(5, 2, len(rewards), False)
    reference, _, mean, std = _reference(theta, population, rewards)
    weights = _weights(theta)
    weights.accumulate(True)
    weights.accumulator.reference = 0.0  # as if c were 0
    for (seed, sign), reward in zip(population.members, rewards, strict=True):
        weights.perturb(seed, sign, 0.01)
        weights.record_reward(reward)
    name = "model.layers.0.mlp.up_proj.weight"
    exact, _, bound = reference[name]
    error = (weights.directions([name], mean=mean)[name].double() / std - exact).abs()
    assert (error > 10 * bound).any()


@pytest.mark.parametrize("normalization", ["zscore", "none"])
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_accumulated_update_matches_the_redrawn_update_and_float64(theta, normalization, optimizer):
    """Whole updates: the masters after an accumulated and a redrawn update, each within its bound
    (the direction's, scaled by α/N, plus one rounding of the master) of θ + (α/N)·Σ z_i ε_i."""
    rewards, _ = CASES["spread"]
    population = Population.sample(1, 0, len(rewards), False)
    lr, n = 0.05, len(rewards)
    reference, coeffs, mean, std = _reference(theta, population, rewards, normalization)
    accumulating, redrawing = _weights(theta, optimizer), _weights(theta, optimizer)
    _evaluate(accumulating, population, rewards)
    norm_acc = accumulating.update_accumulated(mean, std, lr, n)
    norm_red = redrawing.update(coeffs, lr, n)
    assert norm_acc == pytest.approx(norm_red, rel=1e-5)
    for name, t in theta.items():
        exact, redraw_bound, acc_bound = reference[name]
        acc, red = accumulating.master[name].detach().double(), redrawing.master[name].detach().double()
        if optimizer == "sgd":
            expected = t.double() + lr / n * exact
            rounding = 2 * U * expected.abs() + 2 * U * (lr / n) * exact.abs()
            assert ((acc - expected).abs() <= lr / n * acc_bound + rounding).all(), name
            assert ((red - expected).abs() <= lr / n * redraw_bound + rounding).all(), name
        else:  # Adam's first step: ≈ α·sign(direction) where the direction is not ~0
            assert ((acc - red).abs() <= 1e-6 * lr + 2 * U * t.double().abs()).float().mean() > 0.999


def test_perturbation_while_accumulating_serves_the_same_weights(theta):
    """Holding ε changes where it is stored, not what the member serves (bit-identical)."""
    plain, accumulating = _weights(theta), _weights(theta)
    accumulating.accumulate(True)
    for seed, sign in ((3, 1.0), (3, -1.0), (4, 1.0)):
        served = dict(plain.perturbed(seed, sign, 0.02))
        held = dict(accumulating.perturbed(seed, sign, 0.02))
        accumulating.record_reward(0.5)
        for name in theta:
            assert torch.equal(served[name], held[name]), name


def test_skipped_update_leaves_the_centre_and_stops_accumulating(theta):
    weights = _weights(theta)
    population = Population.sample(0, 0, 4, False)
    _evaluate(weights, population, [0.5] * 4)
    assert member_coefficients(population, [0.5] * 4) is None  # degenerate: the strategy skips
    weights.accumulate(False)
    assert all(torch.equal(weights.master[n], t) for n, t in theta.items())
    assert not weights.accumulator.active
    list(weights.perturbed(9, 1.0, 0.1))  # a later probe perturbs as without accumulation
    assert weights.accumulator.nbytes == 3 * 4 * sum(t.numel() for t in theta.values())


def test_members_must_be_recorded_in_turn(theta):
    weights = _weights(theta)
    with pytest.raises(RuntimeError, match="record"):
        weights.record_reward(1.0)  # not accumulating: no member awaits a reward
    weights.accumulate(True)
    weights.perturb(1, 1.0, 0.1)
    with pytest.raises(RuntimeError, match="not recorded"):
        weights.perturb(2, 1.0, 0.1)
    with pytest.raises(RuntimeError, match="not recorded"):
        weights.update_accumulated(0.0, 1.0, 0.1, 2)
    with pytest.raises(ValueError, match="not both"):
        weights.directions(["model.norm.weight"])


def test_an_antithetic_pair_draws_its_direction_once(theta, monkeypatch):
    """The second member of a ± pair reuses the held ε: N/2 draws per tensor, not N."""
    from es_lightning.es import weights as weights_module

    drawn: list[int] = []
    real = weights_module.noise_like

    def counted(seed, *args, **kwargs):
        drawn.append(seed)
        return real(seed, *args, **kwargs)

    monkeypatch.setattr(weights_module, "noise_like", counted)
    weights = _weights(theta)
    population = Population.sample(2, 0, 6, True)
    _evaluate(weights, population, [0.1, 0.2, 0.3, 0.1, 0.2, 0.2])
    assert sorted(drawn) == sorted(s for s in population.seeds[::2] for _ in theta)
