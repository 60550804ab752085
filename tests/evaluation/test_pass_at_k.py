import itertools
import math

import pytest

from es_lightning.evaluation.pass_at_k import pass_at_k, pass_at_k_curve


def brute_force(n: int, c: int, k: int) -> float:
    """Fraction of all k-subsets of n samples (the first c correct) that hold a correct one."""
    subsets = list(itertools.combinations(range(n), k))
    return sum(any(i < c for i in s) for s in subsets) / len(subsets)


def test_matches_enumeration_for_every_small_case():
    for n in range(1, 9):
        for c in range(n + 1):
            for k in range(1, n + 1):
                expected = brute_force(n, c, k)
                assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12), (n, c, k)
                assert pass_at_k_curve([c], n, [k])[k] == pytest.approx(expected, abs=1e-12), (n, c, k)


def test_closed_form_values():
    assert pass_at_k(16, 2, 4) == pytest.approx(1 - math.comb(14, 4) / math.comb(16, 4), abs=1e-15)
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3, abs=1e-15)
    assert pass_at_k(5, 0, 3) == 0.0
    assert pass_at_k(5, 3, 3) == 1.0  # n - c = 2 < k = 3
    assert pass_at_k(5, 5, 1) == 1.0


def test_large_n_is_stable_and_exact():
    exact = 1 - math.comb(997, 500) / math.comb(1000, 500)
    for value in (pass_at_k(1000, 3, 500), pass_at_k_curve([3], 1000, [500])[500]):
        assert math.isfinite(value) and 0.0 <= value <= 1.0
        assert value == pytest.approx(exact, abs=1e-12)
    # the whole curve at n = 2048 stays in [0, 1] and is non-decreasing in k
    curve = pass_at_k_curve([0, 1, 7, 1000, 2048], 2048)
    values = [curve[k] for k in range(1, 2049)]
    assert all(0.0 <= v <= 1.0 for v in values)
    assert all(b >= a - 1e-12 for a, b in zip(values, values[1:], strict=False))
    assert curve[2048] == pytest.approx(0.8)  # 4 of 5 prompts have a correct sample


def test_curve_averages_over_prompts_and_defaults_to_every_k():
    counts = [0, 1, 3, 4]
    curve = pass_at_k_curve(counts, n=4)
    assert list(curve) == [1, 2, 3, 4]
    for k in range(1, 5):
        expected = sum(brute_force(4, c, k) for c in counts) / len(counts)
        assert curve[k] == pytest.approx(expected, abs=1e-12)
    assert list(pass_at_k_curve(counts, 4, ks=[4, 1])) == [4, 1]


@pytest.mark.parametrize(
    ("n", "c", "k", "name"),
    [
        (5, 1, 0, "k must be >= 1"),
        (5, 1, 6, "k must be <= n"),
        (5, -1, 1, "c .* >= 0"),
        (5, 6, 1, "c .* <= n"),
    ],
)
def test_bad_arguments_are_named(n, c, k, name):
    with pytest.raises(ValueError, match=name):
        pass_at_k(n, c, k)


def test_curve_errors():
    with pytest.raises(ValueError, match="empty"):
        pass_at_k_curve([], 4)
    with pytest.raises(ValueError, match=r"correct_counts\[1\]=5"):
        pass_at_k_curve([1, 5], 4)
    with pytest.raises(ValueError, match="k must be <= n"):
        pass_at_k_curve([1], 4, ks=[8])
    with pytest.raises(TypeError, match="must be an int"):
        pass_at_k(4, 1.5, 1)
