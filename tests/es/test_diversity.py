"""Population diversity metrics against plain loops and hand-made success tables; the excess over
a σ = 0 baseline sampled with the members' own seeds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from es_lightning.callbacks.probe import probe_sampling_seeds
from es_lightning.es.diversity import binary_entropy, excess_diversity, population_diversity


def _h(p: float) -> float:
    return 0.0 if p in (0.0, 1.0) else -p * math.log2(p) - (1 - p) * math.log2(1 - p)


def _reference(p: list[list[float]]) -> dict[str, float]:
    n, prompts = len(p), len(p[0])
    sums = dict.fromkeys(("p_pop", "p_same", "gap", "js"), 0.0)
    for x in range(prompts):
        rates = [p[i][x] for i in range(n)]
        mean = sum(rates) / n
        miss = 1.0
        for r in rates:
            miss *= 1 - r
        p_pop, p_same = 1 - miss, 1 - (1 - mean) ** n
        sums["p_pop"] += p_pop
        sums["p_same"] += p_same
        sums["gap"] += p_pop - p_same
        sums["js"] += _h(mean) - sum(_h(r) for r in rates) / n
    return {k: v / prompts for k, v in sums.items()}


def test_against_plain_loops_on_random_tables():
    rng = np.random.default_rng(0)
    for n, prompts in [(2, 1), (4, 7), (32, 16)]:
        p = rng.integers(0, 5, size=(n, prompts)) / 4  # rates of 4 responses: 0, .25, ..., 1
        got, ref = population_diversity(p), _reference(p.tolist())
        assert set(got) == {f"diversity/{key}" for key in ref}
        for key in ref:
            assert got[f"diversity/{key}"] == pytest.approx(ref[key], abs=1e-12)


def test_identical_members_have_no_diversity():
    p = np.tile(np.array([[1.0, 0.0, 0.5, 0.25]]), (8, 1))
    got = population_diversity(p)
    assert got["diversity/js"] == pytest.approx(0.0, abs=1e-12)
    assert got["diversity/p_pop"] == pytest.approx(got["diversity/p_same"], abs=1e-12)
    assert got["diversity/gap"] == pytest.approx(0.0, abs=1e-12)


def test_complementary_members_cover_more_than_their_mean():
    p = np.array([[1.0, 0.0], [0.0, 1.0]])  # each member solves the prompt the other misses
    got = population_diversity(p)
    assert got["diversity/p_pop"] == 1.0
    assert got["diversity/p_same"] == pytest.approx(0.75)  # 1 - (1 - 1/2)^2
    assert got["diversity/gap"] == pytest.approx(0.25)
    assert got["diversity/js"] == pytest.approx(1.0)  # h(1/2) - mean(h(1), h(0)) = 1 bit


def test_binary_entropy_edges():
    assert binary_entropy(np.array([0.0, 1.0, 0.5])).tolist() == [0.0, 0.0, 1.0]


@pytest.mark.parametrize(("success", "match"), [(np.zeros(3), "shape"), (np.full((2, 2), 1.5), r"\[0, 1\]")])
def test_bad_input_is_named(success, match):
    with pytest.raises(ValueError, match=match):
        population_diversity(success)
    with pytest.raises(ValueError, match="same shape"):
        excess_diversity(np.zeros((2, 3)), np.zeros((3, 3)))


def _probe(rates: np.ndarray, seed: int, samples: int) -> np.ndarray:
    """A deterministic sampler: ``samples`` draws per prompt from the stream of (seed, prompt), as an
    engine samples the same responses for the same weights and seed; returns the success rates."""
    return np.array(
        [(np.random.default_rng([seed, x]).random(samples) < r).mean() for x, r in enumerate(rates)]
    )


@pytest.mark.parametrize("mode", ["common", "independent"])
def test_identical_members_have_no_excess_diversity(mode):
    """σ = 0: every member is the centre. Copy i samples with member i's seed, so the members'
    rates are the copies' and the excess is exactly 0, while the raw JS of independent seeds is not."""
    n, samples = 16, 4
    centre = np.random.default_rng(0).uniform(0.1, 0.9, size=12)  # p_θ(x) of 12 probe prompts
    for update in range(5):
        seeds = probe_sampling_seeds(0, update, n, mode)
        members = np.stack([_probe(centre, s, samples) for s in seeds])
        copies = np.stack([_probe(centre, s, samples) for s in seeds])
        got = excess_diversity(members, copies)
        assert got["diversity/js_excess"] == 0.0 and got["diversity/gap_excess"] == 0.0
        if mode == "independent":
            assert got["diversity/js"] > 0.1  # sampling noise alone looks like diversity
        else:
            assert got["diversity/js"] == pytest.approx(0.0, abs=1e-12)  # one shared draw


def test_different_members_show_excess_diversity():
    """Members whose rates truly differ (each solves its own half of the prompts better) exceed the
    copies' diversity, on average over probes."""
    n, samples, prompts = 16, 4, 12
    rng = np.random.default_rng(1)
    centre = np.full(prompts, 0.5)
    excess = []
    for update in range(20):
        rates = np.clip(centre + rng.choice([-0.4, 0.4], size=(n, prompts)), 0, 1)
        seeds = probe_sampling_seeds(0, update, n, "independent")
        members = np.stack([_probe(rates[i], s, samples) for i, s in enumerate(seeds)])
        copies = np.stack([_probe(centre, s, samples) for s in seeds])
        excess.append(excess_diversity(members, copies)["diversity/js_excess"])
    assert np.mean(excess) > 0.1


def test_probe_seeds():
    common, independent = (
        probe_sampling_seeds(3, 7, 4, "common"),
        probe_sampling_seeds(3, 7, 4, "independent"),
    )
    assert len(set(common)) == 1 and common[0] == independent[0] and len(set(independent)) == 4
    assert all(0 <= s < 2**31 for s in independent)
    assert probe_sampling_seeds(3, 8, 4, "independent") != independent  # a new draw every update
    with pytest.raises(ValueError, match="mode"):
        probe_sampling_seeds(3, 7, 4, "shared")
