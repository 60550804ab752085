"""The shared noise table (``noise: table``): its numbers, its slices against a plain reference,
and ES reading them (perturb, restore, the redrawn and the accumulated update) against references
computed from those slices."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import numpy as np
import pytest
import torch

from es_lightning.errors import ConfigError
from es_lightning.es.lowrank import LowRankNoise
from es_lightning.es.noise import noise_like, param_seed, seed_schedule
from es_lightning.es.noise_table import TABLE_SEED, NoiseTable, check_table_size, noise_table
from es_lightning.es.update import Population, apply_es_update, member_coefficients
from es_lightning.es.weights import ESWeights
from es_lightning.weight_files import load_weights, weight_files

SIZE = 2**16  # twice the tiny model's largest tensor (32,768): many slices wrap
SIGMA, LR = 0.02, 0.05


def _reference_slice(table: NoiseTable, seed: int, name: str, shape: tuple[int, ...]) -> torch.Tensor:
    """ε as the docs define it: the table's numbers from param_seed(seed, name) mod size on,
    wrapping, reshaped (read from the table written out twice)."""
    start = param_seed(seed, name) % table.size
    return torch.cat([table.numbers, table.numbers])[start : start + int(np.prod(shape))].reshape(shape)


@pytest.fixture(scope="module")
def theta(tiny_model_path) -> dict[str, torch.Tensor]:
    """The tiny model's real fp32 weights."""
    return load_weights(weight_files(str(tiny_model_path)), device="cpu")


def _weights(theta, write=None, dtype=torch.float32, table_size: int | None = SIZE) -> ESWeights:
    weights = ESWeights({n: t.clone() for n, t in theta.items()}, write or (lambda named: list(named)), dtype)
    weights.use_noise_table(table_size)
    return weights


def test_table_and_its_slices_are_standard_normal():
    table = NoiseTable(2**20)
    assert table.numbers.dtype == torch.float32 and table.size == 2**20
    n = table.size
    assert abs(float(table.numbers.mean())) < 5 / n**0.5
    assert abs(float(table.numbers.var()) - 1) < 5 * (2 / n) ** 0.5
    for seed in range(20):
        eps = table.slice(seed, "model.layers.0.mlp.up_proj.weight", (256, 256)).double()
        k = eps.numel()
        assert abs(float(eps.mean())) < 5 / k**0.5, seed
        assert abs(float(eps.var()) - 1) < 5 * (2 / k) ** 0.5, seed


def test_slice_is_the_tables_numbers_from_the_seeded_offset_wrapping():
    table = NoiseTable(1000)
    wrapped = 0
    for seed in range(40):
        for name, shape in (("a.weight", (30, 20)), ("b.bias", (7,)), ("c", (1000,))):
            got = table.slice(seed, name, shape)
            assert got.shape == shape
            assert torch.equal(got, _reference_slice(table, seed, name, shape)), (seed, name)
            wrapped += param_seed(seed, name) % 1000 + int(np.prod(shape)) > 1000
    assert wrapped > 10  # the wrapping path ran
    with pytest.raises(ValueError, match="more than the table"):
        table.slice(0, "d", (1001,))


@pytest.mark.integration
def test_the_table_is_the_same_in_every_process_and_built_once_in_each():
    code = (
        "import hashlib; from es_lightning.es.noise_table import noise_table; "
        "t = noise_table(65536); print(hashlib.sha256(t.numbers.numpy().tobytes()).hexdigest()); "
        "print(hashlib.sha256(t.slice(7, 'w', (200, 300)).numpy().tobytes()).hexdigest())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    table = noise_table(65536)
    here = [
        hashlib.sha256(t.numpy().tobytes()).hexdigest()
        for t in (table.numbers, table.slice(7, "w", (200, 300)))
    ]
    assert out.split() == here
    assert noise_table(65536) is table  # built once per process and device
    gen = torch.Generator().manual_seed(TABLE_SEED)
    assert torch.equal(table.numbers, torch.randn(65536, generator=gen))


def test_two_members_share_about_n_over_size_of_their_numbers_uncorrelated():
    """The price in the docs: slices of n numbers at two members' offsets share n/size of their
    numbers on average (counted from the offsets), and the directions stay uncorrelated."""
    size, n, pairs = 1000, 100, 4000
    table = NoiseTable(size)
    shared, dots = [], []
    for a, b in zip(range(pairs), range(pairs, 2 * pairs)):
        ia = {(param_seed(a, "w") + i) % size for i in range(n)}
        ib = {(param_seed(b, "w") + i) % size for i in range(n)}
        shared.append(len(ia & ib) / n)
        dots.append(float(table.slice(a, "w", (n,)) @ table.slice(b, "w", (n,))) / n)
    assert abs(np.mean(shared) - n / size) < 0.01
    assert abs(np.mean(dots)) < 5 * (1 / n / pairs) ** 0.5


def test_a_table_smaller_than_a_tensor_is_refused_naming_it(theta):
    with pytest.raises(ConfigError, match=r"noise_table_size 100 .*'big\.weight' \(200 numbers\)"):
        check_table_size(100, {"a": (10,), "big.weight": (20, 10)})
    check_table_size(200, {"a": (10,), "big.weight": (20, 10)})
    with pytest.raises(ConfigError, match=r"mlp\.\w+_proj\.weight' \(32768 numbers\)"):
        _weights(theta, table_size=32767)


def test_low_rank_and_a_running_population_refuse_the_table(theta):
    weights = ESWeights({n: t.clone() for n, t in theta.items()}, list, torch.float32, noise=LowRankNoise(2))
    with pytest.raises(ValueError, match="low-rank"):
        weights.use_noise_table(SIZE)
    weights = _weights(theta, table_size=None)
    weights.accumulate(True)
    with pytest.raises(RuntimeError, match="population"):
        weights.use_noise_table(SIZE)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_perturb_serves_master_plus_sigma_slice_and_restore_is_bit_exact(theta, dtype):
    served = {n: t.to(dtype) for n, t in theta.items()}

    def write(named):
        for name, tensor in named:
            served[name] = tensor.clone()

    weights = _weights(theta, write, dtype)
    table = weights.table
    assert table is not None
    weights.write_centre()
    centre = {n: t.clone() for n, t in served.items()}
    for cycle, seed in enumerate(seed_schedule(5, 0, 200)):
        sign = 1.0 if cycle % 2 else -1.0
        weights.perturb(seed, sign, SIGMA)
        if cycle < 3:
            for name, m in theta.items():
                eps = _reference_slice(table, seed, name, tuple(m.shape))
                assert torch.equal(served[name], torch.add(m, eps, alpha=sign * SIGMA).to(dtype)), name
                generator = torch.add(m, noise_like(seed, name, m.shape), alpha=sign * SIGMA).to(dtype)
                assert not torch.equal(served[name], generator)  # the table, not the generator
        weights.restore()
        weights.serve_centre()
        assert all(torch.equal(served[n], centre[n]) for n in centre), cycle
    assert all(torch.equal(weights.master[n], theta[n]) for n in theta)


def test_updates_read_the_slices_redrawn_and_accumulated(theta):
    population = Population.sample(3, 0, 6, antithetic=False)
    rewards = np.array([0.25, 0.5, 0.0, 0.75, 0.5, 1.0])
    coeffs = member_coefficients(population, rewards)
    assert coeffs is not None
    redrawn = _weights(theta)
    table = redrawn.table
    assert table is not None
    norm = redrawn.update(coeffs, LR, population.size)
    z = (rewards - rewards.mean()) / rewards.std()
    for name, m in theta.items():  # float64 reference from the slices
        step = sum(
            zi * _reference_slice(table, s, name, tuple(m.shape)).double()
            for zi, s in zip(z, population.seeds)
        )
        expected = m.double() + LR / population.size * step
        torch.testing.assert_close(redrawn.master[name].double(), expected, rtol=0, atol=1e-6)
    plain = {n: t.clone() for n, t in theta.items()}
    assert apply_es_update(plain, coeffs, LR, population.size, table=table) == norm
    assert all(torch.equal(plain[n], redrawn.master[n]) for n in plain)

    accumulated = _weights(theta)
    accumulated.accumulate(True)
    for (seed, sign), reward in zip(population.members, rewards):
        accumulated.perturb(seed, sign, SIGMA)
        accumulated.record_reward(float(reward))
        accumulated.restore()
    assert accumulated.accumulator.held == {}  # nothing held: the fold reads the slice again
    params = sum(t.numel() for t in theta.values())
    assert accumulated.accumulator.nbytes == 8 * params  # A and B only
    accumulated.update_accumulated(float(rewards.mean()), float(rewards.std()), LR, population.size)
    for name in theta:  # the same update up to the order of float32 sums
        torch.testing.assert_close(accumulated.master[name], redrawn.master[name], rtol=0, atol=1e-6)
    drawn = _weights(theta, table_size=None)
    drawn.update(coeffs, LR, population.size)
    assert any(not torch.allclose(drawn.master[n], redrawn.master[n]) for n in theta)
