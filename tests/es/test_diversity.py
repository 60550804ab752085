"""Population diversity metrics against plain loops and hand-made success tables."""

from __future__ import annotations

import math

import numpy as np
import pytest

from es_lightning.es.diversity import binary_entropy, population_diversity


def _h(p: float) -> float:
    return 0.0 if p in (0.0, 1.0) else -p * math.log2(p) - (1 - p) * math.log2(1 - p)


def _reference(p: list[list[float]], z: list[float]) -> dict[str, float]:
    n, prompts = len(p), len(p[0])
    sums = dict.fromkeys(("p_pop", "p_same", "gap", "js", "cov"), 0.0)
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
        z_mean = sum(z) / n
        sums["cov"] += sum((z[i] - z_mean) * (rates[i] - mean) for i in range(n)) / n
    return {k: v / prompts for k, v in sums.items()}


def test_against_plain_loops_on_random_tables():
    rng = np.random.default_rng(0)
    for n, prompts in [(2, 1), (4, 7), (32, 16)]:
        p = rng.integers(0, 5, size=(n, prompts)) / 4  # rates of 4 responses: 0, .25, ..., 1
        z = rng.normal(size=n)
        got, ref = population_diversity(p, z), _reference(p.tolist(), z.tolist())
        for key in ("p_pop", "p_same", "gap", "js"):
            assert got[f"diversity/{key}"] == pytest.approx(ref[key], abs=1e-12)
        assert got["diversity/weight_success_cov"] == pytest.approx(ref["cov"], abs=1e-12)


def test_identical_members_have_no_diversity():
    p = np.tile(np.array([[1.0, 0.0, 0.5, 0.25]]), (8, 1))
    got = population_diversity(p)
    assert got["diversity/js"] == pytest.approx(0.0, abs=1e-12)
    assert got["diversity/p_pop"] == pytest.approx(got["diversity/p_same"], abs=1e-12)
    assert got["diversity/gap"] == pytest.approx(0.0, abs=1e-12)
    assert "diversity/weight_success_cov" not in got


def test_complementary_members_cover_more_than_their_mean():
    p = np.array([[1.0, 0.0], [0.0, 1.0]])  # each member solves the prompt the other misses
    got = population_diversity(p, z=np.array([1.0, -1.0]))
    assert got["diversity/p_pop"] == 1.0
    assert got["diversity/p_same"] == pytest.approx(0.75)  # 1 - (1 - 1/2)^2
    assert got["diversity/gap"] == pytest.approx(0.25)
    assert got["diversity/js"] == pytest.approx(1.0)  # h(1/2) - mean(h(1), h(0)) = 1 bit
    assert got["diversity/weight_success_cov"] == pytest.approx(0.0)  # +1 on one prompt, -1 on the other


def test_rewards_aligned_with_success_have_positive_covariance():
    p = np.array([[1.0, 1.0], [0.0, 1.0], [0.0, 0.0]])
    assert population_diversity(p, z=np.array([1.2, 0.0, -1.2]))["diversity/weight_success_cov"] > 0
    assert population_diversity(p, z=np.array([-1.2, 0.0, 1.2]))["diversity/weight_success_cov"] < 0


def test_binary_entropy_edges():
    assert binary_entropy(np.array([0.0, 1.0, 0.5])).tolist() == [0.0, 0.0, 1.0]


@pytest.mark.parametrize(
    ("success", "z", "match"),
    [
        (np.zeros(3), None, "shape"),
        (np.full((2, 2), 1.5), None, r"\[0, 1\]"),
        (np.zeros((2, 2)), np.zeros(3), "z must have shape"),
    ],
)
def test_bad_input_is_named(success, z, match):
    with pytest.raises(ValueError, match=match):
        population_diversity(success, z)
