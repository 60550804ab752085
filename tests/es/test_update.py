"""The ES update, antithetic pairs, optimizer path, perturb/restore and κ_pair against references."""

import math

import numpy as np
import pytest
import torch

from es_lightning.es.noise import noise_like, seed_schedule
from es_lightning.es.update import (
    Population,
    apply_es_update,
    assign_es_grad_,
    es_direction,
    kappa_pair,
    member_coefficients,
    perturb_,
    restore_,
)

REWARDS = [0.0, 1.0, 1.0, 0.5]
LR = 0.5
SHAPES = {"encoder.weight": (5, 4), "encoder.bias": (7,), "head.weight": (2, 3, 2)}


def _model(device="cpu") -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return {n: torch.randn(s, generator=g).to(device) for n, s in SHAPES.items()}


def _zscore_ref(r) -> list[float]:
    r = [float(x) for x in r]
    mean = sum(r) / len(r)
    std = math.sqrt(sum((x - mean) ** 2 for x in r) / len(r))
    return [(x - mean) / std for x in r]


def _one_point_reference(theta, seeds, z, lr, device="cpu"):
    """θ + α/N Σ_i z_i ε_i with explicit loops in float64."""
    n = len(seeds)
    out = {}
    for name, p in theta.items():
        acc = p.detach().double().clone()
        for s, zi in zip(seeds, z, strict=True):
            acc += (lr / n) * zi * noise_like(s, name, p.shape, device).double()
        out[name] = acc
    return out


def _clone(d):
    return {k: v.detach().clone() for k, v in d.items()}


def _assert_close(got, ref, atol=1e-6):
    assert got.keys() == ref.keys()
    for k in ref:
        torch.testing.assert_close(got[k].double(), ref[k].double(), rtol=0, atol=atol)


# --------------------------------------------------------------------------- population


def test_population_sample_one_point():
    pop = Population.sample(run_seed=3, step=7, population_size=4, antithetic=False)
    assert pop.seeds == seed_schedule(3, 7, 4)
    assert pop.signs == [1.0] * 4
    assert pop.size == len(pop) == 4 and not pop.antithetic
    assert pop == Population.sample(3, 7, 4, False)
    assert pop != Population.sample(3, 8, 4, False)
    assert pop.members == list(zip(pop.seeds, pop.signs, strict=True))


def test_population_sample_antithetic():
    pop = Population.sample(3, 7, 6, antithetic=True)
    base = seed_schedule(3, 7, 3)
    assert pop.seeds == [base[0], base[0], base[1], base[1], base[2], base[2]]
    assert pop.signs == [1.0, -1.0] * 3
    assert pop.antithetic and pop.size == 6


def test_population_errors():
    with pytest.raises(ValueError, match="even"):
        Population.sample(0, 0, 5, antithetic=True)
    with pytest.raises(ValueError, match=">= 1"):
        Population.sample(0, 0, 0, antithetic=False)
    with pytest.raises(ValueError):
        Population(seeds=[1, 2], signs=[1.0])
    with pytest.raises(ValueError, match="pairs"):
        Population(seeds=[1, 2], signs=[1.0, -1.0], antithetic=True)


# --------------------------------------------------------------------------- coefficients


def test_member_coefficients_one_point():
    pop = Population.sample(0, 0, 4, antithetic=False)
    coeffs = member_coefficients(pop, REWARDS, "zscore")
    assert list(coeffs) == pop.seeds
    np.testing.assert_allclose(list(coeffs.values()), _zscore_ref(REWARDS), atol=1e-12)
    coeffs = member_coefficients(pop, REWARDS, "none")
    np.testing.assert_allclose(list(coeffs.values()), REWARDS, atol=0)


def test_member_coefficients_antithetic_pairs_combine():
    pop = Population.sample(0, 0, 4, antithetic=True)
    coeffs = member_coefficients(pop, REWARDS, "zscore")
    z = _zscore_ref(REWARDS)
    assert list(coeffs) == [pop.seeds[0], pop.seeds[2]]
    np.testing.assert_allclose(
        [coeffs[pop.seeds[0]], coeffs[pop.seeds[2]]], [z[0] - z[1], z[2] - z[3]], atol=1e-12
    )


def test_member_coefficients_degenerate_and_errors():
    pop = Population.sample(0, 0, 4, antithetic=False)
    assert member_coefficients(pop, [0.5] * 4, "zscore") is None
    assert member_coefficients(pop, [0.5] * 4, "none") is None
    with pytest.raises(ValueError, match="expected 4 rewards"):
        member_coefficients(pop, [0.0, 1.0], "zscore")
    with pytest.raises(ValueError, match="unknown reward normalization"):
        member_coefficients(pop, REWARDS, "bogus")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- update


def test_update_matches_float64_reference_one_point():
    theta0 = _model()
    pop = Population.sample(0, 0, 4, antithetic=False)
    ref = _one_point_reference(theta0, pop.seeds, _zscore_ref(REWARDS), LR)

    params = _clone(theta0)
    norm = apply_es_update(params, member_coefficients(pop, REWARDS, "zscore"), lr=LR, population_size=4)
    _assert_close(params, ref)
    assert all(p.dtype == torch.float32 for p in params.values())
    ref_norm = math.sqrt(sum(float(((ref[k] - theta0[k].double()) ** 2).sum()) for k in ref))
    assert ref_norm > 0.1  # the update is not trivially small
    assert norm == pytest.approx(ref_norm, rel=1e-6)


def test_update_matches_reference_rank_normalization():
    theta0 = _model()
    pop = Population.sample(1, 2, 4, antithetic=False)
    z_rank = [-0.5, 2.5 / 3 - 0.5, 2.5 / 3 - 0.5, 1 / 3 - 0.5]  # hand-worked centred ranks
    ref = _one_point_reference(theta0, pop.seeds, z_rank, LR)
    params = _clone(theta0)
    apply_es_update(params, member_coefficients(pop, REWARDS, "rank"), lr=LR, population_size=4)
    _assert_close(params, ref)


def test_update_matches_float64_reference_antithetic():
    theta0 = _model()
    pop = Population.sample(0, 0, 4, antithetic=True)
    z = _zscore_ref(REWARDS)
    n = 4
    ref = {}
    for name, p in theta0.items():
        acc = p.double().clone()
        for j in range(n // 2):
            eps = noise_like(pop.seeds[2 * j], name, p.shape, "cpu").double()
            acc += (LR / n) * (z[2 * j] - z[2 * j + 1]) * eps
        ref[name] = acc
    params = _clone(theta0)
    norm = apply_es_update(params, member_coefficients(pop, REWARDS, "zscore"), lr=LR, population_size=n)
    _assert_close(params, ref)
    assert norm == pytest.approx(
        math.sqrt(sum(float(((ref[k] - theta0[k].double()) ** 2).sum()) for k in ref)), rel=1e-6
    )


def test_es_direction_equals_applied_delta():
    theta0 = _model()
    pop = Population.sample(0, 0, 4, antithetic=False)
    coeffs = member_coefficients(pop, REWARDS, "zscore")
    delta = es_direction(theta0, coeffs, lr=LR, population_size=4)
    params = _clone(theta0)
    norm = apply_es_update(params, coeffs, lr=LR, population_size=4)
    for k in theta0:
        assert delta[k].dtype == torch.float32
        assert torch.equal(params[k], theta0[k] + delta[k])
    assert norm == pytest.approx(
        math.sqrt(sum(float(d.double().square().sum()) for d in delta.values())), rel=1e-9
    )
    # es_direction does not modify its input.
    for k, v in _model().items():
        assert torch.equal(theta0[k], v)


def test_sgd_optimizer_path_equals_plain_es():
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3))
    params = dict(module.named_parameters())
    plain = {k: v.detach().clone() for k, v in params.items()}
    before = {k: v.detach().clone() for k, v in params.items()}
    pop = Population.sample(0, 4, 4, antithetic=True)
    coeffs = member_coefficients(pop, REWARDS, "zscore")

    apply_es_update(plain, coeffs, lr=LR, population_size=4)
    opt = torch.optim.SGD(module.parameters(), lr=LR)
    opt.zero_grad()
    assign_es_grad_(params, coeffs, population_size=4)
    opt.step()
    moved = 0.0
    for k, p in params.items():
        torch.testing.assert_close(p.detach(), plain[k], rtol=0, atol=1e-6)
        moved += float((p.detach() - before[k]).abs().max())
    assert moved > 0.01  # the step is real, not a no-op on both paths


def test_apply_on_module_parameters_in_place():
    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 3)
    before = {k: v.detach().clone() for k, v in lin.named_parameters()}
    pop = Population.sample(0, 0, 4, antithetic=False)
    ref = _one_point_reference(before, pop.seeds, _zscore_ref(REWARDS), LR)
    apply_es_update(dict(lin.named_parameters()), member_coefficients(pop, REWARDS), lr=LR, population_size=4)
    _assert_close({k: v.detach() for k, v in lin.named_parameters()}, ref)


def test_adam_option_moves_along_es_direction():
    theta0 = _model()
    params = _clone(theta0)
    pop = Population.sample(0, 0, 4, antithetic=False)
    coeffs = member_coefficients(pop, REWARDS, "zscore")
    delta = es_direction(theta0, coeffs, lr=LR, population_size=4)
    opt = torch.optim.Adam(params.values(), lr=1e-3)
    assign_es_grad_(params, coeffs, population_size=4)
    opt.step()
    for k in theta0:
        step = params[k] - theta0[k]
        mask = delta[k].abs() > 1e-3
        assert mask.any()
        assert torch.equal(torch.sign(step[mask]), torch.sign(delta[k][mask]))


def test_update_rejects_low_precision_master():
    params = {"w": torch.zeros(3, dtype=torch.bfloat16)}
    with pytest.raises(TypeError, match="float32"):
        apply_es_update(params, {1: 1.0}, lr=0.1, population_size=1)


# --------------------------------------------------------------------------- perturb / restore


SIGMA = 0.02  # large enough to move bf16 values of order 1


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_perturb_restore_1000_cycles_bit_exact(dtype):
    master = {"a": torch.randn(256, generator=torch.Generator().manual_seed(1)), "b": torch.randn(8, 16)}
    master_copy = _clone(master)
    serving = {k: v.to(dtype, copy=True) for k, v in master.items()}
    centre = _clone(serving)
    seeds = seed_schedule(0, 0, 1000)
    for cycle, seed in enumerate(seeds):
        sign = 1.0 if cycle % 2 == 0 else -1.0
        perturb_(serving, master, seed, sign, SIGMA)
        if cycle < 5:
            for k in master:
                assert not torch.equal(serving[k], centre[k])
                expected = master[k] + sign * SIGMA * noise_like(seed, k, master[k].shape, "cpu")
                assert serving[k].dtype == dtype
                # Up to rounding (the fused add may round differently from this reference).
                torch.testing.assert_close(serving[k], expected.to(dtype))
        restore_(serving, master)
        for k in master:
            assert torch.equal(serving[k], centre[k]), f"{dtype} drifted at cycle {cycle}"
    for k in master:  # the master is never touched
        assert torch.equal(master[k], master_copy[k])


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_naive_in_place_add_sub_drifts(dtype):
    """Contrast: p += σε; p -= σε in low precision does NOT return to the centre."""
    master = torch.randn(256, generator=torch.Generator().manual_seed(1))
    p = master.to(dtype)
    centre = p.clone()
    for seed in seed_schedule(0, 0, 1000):
        step = (SIGMA * noise_like(seed, "a", p.shape, "cpu")).to(dtype)
        p.add_(step)
        p.sub_(step)
    assert not torch.equal(p, centre)


def test_perturb_errors():
    master = {"a": torch.zeros(3)}
    with pytest.raises(KeyError, match="no master"):
        perturb_({"b": torch.zeros(3)}, master, 1, 1.0, 0.1)
    with pytest.raises(ValueError, match="shape"):
        perturb_({"a": torch.zeros(4)}, master, 1, 1.0, 0.1)
    with pytest.raises(TypeError, match="float32"):
        restore_({"a": torch.zeros(3)}, {"a": torch.zeros(3, dtype=torch.bfloat16)})


def test_perturb_refuses_serving_that_aliases_master():
    master = {"a": torch.randn(8)}
    before = master["a"].clone()
    with pytest.raises(ValueError, match="shares memory"):
        perturb_({"a": master["a"].to(torch.float32)}, master, 1, 1.0, 0.1)
    with pytest.raises(ValueError, match="shares memory"):
        perturb_({"a": master["a"][:]}, master, 1, 1.0, 0.1)
    assert torch.equal(master["a"], before)


def test_perturb_on_module_parameters():
    lin = torch.nn.Linear(4, 3).to(torch.bfloat16)
    master = {k: v.detach().float().clone() for k, v in lin.named_parameters()}
    centre = {k: v.detach().clone() for k, v in lin.named_parameters()}
    perturb_(dict(lin.named_parameters()), master, 9, -1.0, 0.1)
    assert not torch.equal(lin.weight.detach(), centre["weight"])
    restore_(dict(lin.named_parameters()), master)
    for k, v in lin.named_parameters():
        assert torch.equal(v.detach(), centre[k])


# --------------------------------------------------------------------------- kappa_pair


def test_kappa_pair_hand_computed():
    pop = Population.sample(0, 0, 4, antithetic=True)
    # diffs [1, 0]: var 0.25; rewards mean 0.75, var 0.1875 -> 4/3
    assert kappa_pair([1.0, 0.0, 1.0, 1.0], pop) == pytest.approx(4 / 3, abs=1e-12)
    # diffs [1, -1]: var 1; rewards var 0.25 -> 4
    assert kappa_pair([1.0, 0.0, 0.0, 1.0], pop) == pytest.approx(4.0, abs=1e-12)
    # perfectly coupled pairs (each pair equal): 0
    assert kappa_pair([1.0, 1.0, 0.0, 0.0], pop) == 0.0
    assert math.isnan(kappa_pair([0.5] * 4, pop))


def test_kappa_pair_uncoupled_is_about_two():
    pop = Population.sample(0, 0, 20000, antithetic=True)
    r = np.random.default_rng(0).normal(size=20000)
    assert kappa_pair(r, pop) == pytest.approx(2.0, abs=0.1)


def test_kappa_pair_errors():
    with pytest.raises(ValueError, match="antithetic"):
        kappa_pair(REWARDS, Population.sample(0, 0, 4, antithetic=False))
    with pytest.raises(ValueError, match="expected 4 rewards"):
        kappa_pair([0.0, 1.0], Population.sample(0, 0, 4, antithetic=True))


# --------------------------------------------------------------------------- CUDA


cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")


@pytest.mark.cuda
@cuda
def test_cuda_update_matches_reference():
    theta0 = _model("cuda")
    pop = Population.sample(0, 0, 4, antithetic=False)
    ref = _one_point_reference(theta0, pop.seeds, _zscore_ref(REWARDS), LR, device="cuda")
    params = _clone(theta0)
    apply_es_update(params, member_coefficients(pop, REWARDS), lr=LR, population_size=4)
    assert all(p.device.type == "cuda" for p in params.values())
    _assert_close(params, ref)


@pytest.mark.cuda
@cuda
def test_cuda_perturb_restore_bf16_bit_exact():
    master = {"a": torch.randn(4096, device="cuda")}
    serving = {"a": master["a"].to(torch.bfloat16)}
    centre = serving["a"].clone()
    for cycle, seed in enumerate(seed_schedule(0, 1, 1000)):
        perturb_(serving, master, seed, 1.0 if cycle % 2 else -1.0, SIGMA)
        restore_(serving, master)
        assert torch.equal(serving["a"], centre)


@pytest.mark.cuda
@cuda
def test_cuda_serving_with_cpu_master_uses_master_device_noise():
    master = {"a": torch.randn(512)}
    serving = {"a": torch.zeros(512, device="cuda", dtype=torch.bfloat16)}
    perturb_(serving, master, 5, 1.0, SIGMA)
    expected = (master["a"] + SIGMA * noise_like(5, "a", (512,), "cpu")).to(torch.bfloat16)
    assert torch.equal(serving["a"].cpu(), expected)
