"""The ES update, antithetic pairs, optimizer path, perturb/restore and κ_pair against references.

Perturb/restore of the serving model is :class:`~es_lightning.es.weights.ESWeights`; its tests here
check the precision contract the update's docstring states (fp32 master, bit-exact restore).
"""

import math

import numpy as np
import pytest
import torch

from es_lightning.es.noise import noise_like, seed_schedule
from es_lightning.es.update import (
    Population,
    apply_es_update,
    assign_es_grad_,
    kappa_pair,
    member_coefficients,
)
from es_lightning.es.weights import ESWeights

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


def _direction_reference(theta, coeffs, population_size, device="cpu"):
    """(1/N) Σ_s c_s ε_s per tensor, with explicit loops in float64."""
    out = {}
    for name, p in theta.items():
        acc = torch.zeros(p.shape, dtype=torch.float64, device=device)
        for s, c in coeffs.items():
            acc += c * noise_like(s, name, p.shape, device).double()
        out[name] = acc / population_size
    return out


def _clone(d):
    return {k: v.detach().clone() for k, v in d.items()}


def _writer(serving):
    """Write ``(name, tensor)`` pairs into ``serving`` with ``copy_`` (as the HF rollout does)."""

    def write(named):
        for name, t in named:
            serving[name].copy_(t)

    return write


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
    """ESWeights' Adam option: its first step is α·sign(Δ) per coordinate (up to Adam's ε)."""
    theta0 = _model()
    pop = Population.sample(0, 0, 4, antithetic=False)
    coeffs = member_coefficients(pop, REWARDS, "zscore")
    direction = _direction_reference(theta0, coeffs, 4)  # Δ/α
    served = {k: torch.zeros_like(v) for k, v in theta0.items()}
    weights = ESWeights(_clone(theta0), _writer(served), torch.float32, optimizer="adam")
    lr = 1e-3
    norm = weights.update(coeffs, lr=lr, population_size=4)
    sq = 0.0
    for k in theta0:
        step = (weights.master[k].detach() - theta0[k]).double()
        mask = direction[k].abs() > 1e-3
        assert mask.float().mean() > 0.9
        torch.testing.assert_close(step[mask], lr * torch.sign(direction[k][mask]), rtol=0, atol=1e-6)
        assert torch.equal(served[k], weights.master[k].detach())  # the new centre is served
        sq += float(step.square().sum())
    assert norm == pytest.approx(math.sqrt(sq), rel=1e-5)


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
    weights = ESWeights(_clone(master), _writer(serving), dtype)
    seeds = seed_schedule(0, 0, 1000)
    for cycle, seed in enumerate(seeds):
        sign = 1.0 if cycle % 2 == 0 else -1.0
        weights.perturb(seed, sign, SIGMA)
        if cycle < 5:
            for k in master:
                assert not torch.equal(serving[k], centre[k])
                expected = master[k] + sign * SIGMA * noise_like(seed, k, master[k].shape, "cpu")
                assert serving[k].dtype == dtype
                # Up to rounding (the fused add may round differently from this reference).
                torch.testing.assert_close(serving[k], expected.to(dtype))
        weights.restore()
        weights.serve_centre()
        for k in master:
            assert torch.equal(serving[k], centre[k]), f"{dtype} drifted at cycle {cycle}"
    for k in master:  # the master is never touched
        assert torch.equal(weights.master[k], master_copy[k])


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


def test_perturb_restore_on_module_parameters():
    lin = torch.nn.Linear(4, 3).to(torch.bfloat16)
    master = {k: v.detach().float().clone() for k, v in lin.named_parameters()}
    centre = {k: v.detach().clone() for k, v in lin.named_parameters()}
    weights = ESWeights(master, _writer(dict(lin.named_parameters())), torch.bfloat16)
    weights.perturb(9, -1.0, 0.1)
    assert not torch.equal(lin.weight.detach(), centre["weight"])
    weights.restore()
    weights.serve_centre()
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
    weights = ESWeights(master, _writer(serving), torch.bfloat16)
    for cycle, seed in enumerate(seed_schedule(0, 1, 1000)):
        weights.perturb(seed, 1.0 if cycle % 2 else -1.0, SIGMA)
        weights.restore()
        weights.serve_centre()
        assert torch.equal(serving["a"], centre)


@pytest.mark.cuda
@cuda
def test_cuda_serving_with_cpu_master_uses_master_device_noise():
    master = {"a": torch.randn(512)}
    serving = {"a": torch.zeros(512, device="cuda", dtype=torch.bfloat16)}
    ESWeights(_clone(master), _writer(serving), torch.bfloat16).perturb(5, 1.0, SIGMA)
    got = serving["a"].cpu().float()
    bf16 = dict(rtol=2**-8, atol=1e-6)  # one bf16 rounding
    torch.testing.assert_close(got, master["a"] + SIGMA * noise_like(5, "a", (512,), "cpu"), **bf16)
    cuda_noise = noise_like(5, "a", (512,), "cuda").cpu()
    assert not torch.allclose(got, master["a"] + SIGMA * cuda_noise, **bf16)
