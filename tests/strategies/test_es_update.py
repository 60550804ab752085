"""The ES update on two ranks (gloo, two processes) against one rank, and which update applies.

Each rank holds the tiny model in an HF rollout and evaluates its members as the strategy does
(perturb, record R_i, restore; the rewards are given, not generated), then takes the update
through :func:`~es_lightning.strategies.es_update.take_update`. Redrawn: the tensors are split
between the ranks and the directions exchanged, so both ranks hold exactly one rank's centre.
Accumulated: the ranks' partial sums are added, so the centre equals one rank's up to the order of
float32 sums, and both ranks hold the same one.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from es_lightning.es.noise import noise_like
from es_lightning.es.update import Population, member_coefficients
from es_lightning.strategies.es_update import accumulates, reward_moments, take_update

REWARDS = [[0.25, 0.5, 0.0, 0.75, 0.5, 1.0], [1.0, 0.0, 0.5, 0.5, 0.25, 0.0]]  # two updates
LR, SIGMA = 0.05, 0.02


def _updates(rank: int, world_size: int, model_path: str, update: str, antithetic: bool = False):
    """Two ES updates of the tiny model by rank ``rank`` of ``world_size``; its final centre."""
    from lightning.fabric.strategies import DDPStrategy

    from es_lightning.rollout.hf import HFRollout
    from es_lightning.strategies import ESStrategy

    class Ranked(ESStrategy):
        @property
        def world_size(self) -> int:
            return world_size

        @property
        def global_rank(self) -> int:
            return rank

        @property
        def root_device(self) -> torch.device:
            return torch.device("cpu")

    assert issubclass(Ranked, DDPStrategy)
    strategy = Ranked(population_size=6, sigma=SIGMA, learning_rate=LR, update=update)
    engine = HFRollout()
    engine.setup(model_path, torch.device("cpu"), torch.float32)
    engine.es_init()
    for step, rewards in enumerate(REWARDS):
        population = Population.sample(7, step, 6, antithetic)
        accumulated = accumulates(update, "zscore", "none")
        engine.es.accumulate(accumulated)
        for i in range(rank, population.size, world_size):
            engine.es.perturb(*population.members[i], SIGMA)
            if accumulated:
                engine.es.record_reward(rewards[i])
            engine.es.restore()
        r = np.array(rewards)
        take_update(strategy, engine.es, member_coefficients(population, r), r, accumulated, LR, "zscore")
    return {n: t.clone() for n, t in engine.es.master.items()}


CASES = [(update, antithetic) for update in ("redraw", "accumulate") for antithetic in (False, True)]


def _two_ranks(rank: int, port: int, model_path: str, out: str) -> None:
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    for update, antithetic in CASES:
        torch.save(_updates(rank, 2, model_path, update, antithetic), f"{out}.{update}.{antithetic}.{rank}")
    dist.destroy_process_group()


def _on_two_ranks(tmp_path, model_path) -> dict[tuple[str, bool], list[dict]]:
    """Every case's centre on both ranks (one launch of two processes: starting one is slow)."""
    import socket

    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = str(tmp_path / "centre")
    mp.spawn(_two_ranks, args=(port, str(model_path), out), nprocs=2, join=True)
    return {(u, a): [torch.load(f"{out}.{u}.{a}.{r}") for r in range(2)] for u, a in CASES}


def _reference(theta: dict, antithetic: bool) -> dict:
    """θ after the two updates in float64: θ ← θ + α/M·Σ_i sign_i z_i ε_i."""
    out = {n: t.double() for n, t in theta.items()}
    for step, rewards in enumerate(REWARDS):
        population = Population.sample(7, step, 6, antithetic)
        r = np.array(rewards)
        z = (r - r.mean()) / r.std()
        for name, t in out.items():
            step_sum = sum(
                zi * sign * noise_like(seed, name, t.shape).double()
                for (seed, sign), zi in zip(population.members, z, strict=True)
            )
            out[name] = t + LR / population.size * step_sum
    return out


@pytest.mark.integration
def test_two_ranks_take_one_ranks_update(tiny_model_path, tmp_path):
    from es_lightning.weight_files import load_weights, weight_files

    theta = load_weights(weight_files(str(tiny_model_path)), device="cpu")
    two = _on_two_ranks(tmp_path, tiny_model_path)
    for antithetic in (False, True):
        reference = _reference(theta, antithetic)
        one = {u: _updates(0, 1, str(tiny_model_path), u, antithetic) for u in ("redraw", "accumulate")}
        redrawn, accumulated = two["redraw", antithetic], two["accumulate", antithetic]
        for name in theta:
            # every rank holds the same centre, bit for bit
            assert torch.equal(redrawn[0][name], redrawn[1][name]), name
            assert torch.equal(accumulated[0][name], accumulated[1][name]), name
            # redrawn on two ranks = redrawn on one, bit for bit (the split draws each ε once)
            assert torch.equal(redrawn[0][name], one["redraw"][name]), name
            # accumulated: the same update up to the order of float32 sums
            torch.testing.assert_close(accumulated[0][name], one["accumulate"][name], rtol=0, atol=1e-6)
            for got in (accumulated[0][name], one["accumulate"][name], one["redraw"][name]):
                torch.testing.assert_close(got.double(), reference[name], rtol=0, atol=1e-6)
        assert any(not torch.equal(accumulated[0][n], one["redraw"][n]) for n in theta)  # not a copy


def test_accumulation_applies_to_affine_normalisations_of_the_true_rewards():
    assert accumulates("accumulate", "zscore", "none") and accumulates("accumulate", "none", "none")
    assert not accumulates("accumulate", "rank", "none")  # ranks are not affine in R
    assert not accumulates("accumulate", "zscore", "permuted")  # R_π(i) is unknown at member i
    assert not accumulates("redraw", "zscore", "none")


def test_reward_moments_are_those_of_the_z_scores():
    from es_lightning.es.normalize import normalize_rewards

    r = np.array([0.25, 0.5, 0.0, 0.75])
    mean, std = reward_moments(r, "zscore")
    np.testing.assert_array_equal((r - mean) / std, normalize_rewards(r, "zscore"))
    assert reward_moments(r, "none") == (0.0, 1.0)
