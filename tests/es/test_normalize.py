"""Reward normalisation against references and hand-worked examples."""

import numpy as np
import pytest

from es_lightning.es.normalize import is_degenerate, normalize_rewards


def test_zscore_matches_numpy_reference():
    r = np.array([0.0, 1.0, 1.0, 0.5, 0.25, 3.0])
    ref = (r - r.sum() / r.size) / np.sqrt(((r - r.sum() / r.size) ** 2).sum() / r.size)  # ddof=0
    z = normalize_rewards(r, "zscore")
    assert z.dtype == np.float64
    np.testing.assert_allclose(z, ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(z.mean(), 0.0, atol=1e-12)
    np.testing.assert_allclose(z.std(), 1.0, atol=1e-12)


def test_zscore_is_default_and_accepts_lists():
    np.testing.assert_allclose(
        normalize_rewards([0, 1, 1, 0.5]), normalize_rewards(np.array([0, 1, 1, 0.5]), "zscore")
    )
    # Hand value: mean 0.625, population std sqrt(0.171875).
    np.testing.assert_allclose(normalize_rewards([0, 1, 1, 0.5])[0], -0.625 / np.sqrt(0.171875), atol=1e-12)


def test_rank_hand_worked_with_ties():
    # ranks (0-based): 0 -> 0; 0.5 -> 1; the two 1.0 share ranks 2,3 -> 2.5.  N-1 = 3.
    z = normalize_rewards([0.0, 1.0, 1.0, 0.5], "rank")
    np.testing.assert_allclose(z, [-0.5, 2.5 / 3 - 0.5, 2.5 / 3 - 0.5, 1 / 3 - 0.5], atol=1e-12)
    # Five rewards, a triple tie in the middle: ranks 0, (1+2+3)/3 = 2 for each, 4.
    z = normalize_rewards([-3.0, 7.0, 2.0, 2.0, 2.0], "rank")
    np.testing.assert_allclose(z, [-0.5, 0.5, 0.0, 0.0, 0.0], atol=1e-12)
    # Without ties it is a linear map of the order onto [-0.5, 0.5].
    z = normalize_rewards([10.0, -1.0, 3.0], "rank")
    np.testing.assert_allclose(z, [0.5, -0.5, 0.0], atol=1e-12)


def test_none_is_identity_copy():
    r = np.array([0.0, 1.0, 1.0, 0.5])
    z = normalize_rewards(r, "none")
    np.testing.assert_array_equal(z, r)
    assert z.dtype == np.float64
    z[0] = 99.0
    assert r[0] == 0.0


def test_degenerate():
    assert is_degenerate([1.0, 1.0, 1.0])
    assert is_degenerate([0.3])
    assert not is_degenerate([1.0, 1.0, 0.0])
    np.testing.assert_array_equal(normalize_rewards([2.0, 2.0, 2.0], "zscore"), np.zeros(3))
    np.testing.assert_array_equal(normalize_rewards([2.0, 2.0, 2.0], "rank"), np.zeros(3))


def test_errors():
    with pytest.raises(ValueError, match="unknown reward normalization"):
        normalize_rewards([0.0, 1.0], "minmax")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="finite"):
        normalize_rewards([0.0, float("nan")], "zscore")
    with pytest.raises(ValueError, match="one-dimensional"):
        normalize_rewards([[0.0, 1.0]], "zscore")
