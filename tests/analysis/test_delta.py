"""Δθ in the two views, float64 sums of squares, τ parsing."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from es_lightning.analysis.delta import in_view, parse_taus, sum_squares, tau_key, weight_delta
from tests.analysis.reference import bf16_round


def test_bf16_view_is_rounding_to_nearest_even_by_hand():
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [
            rng.normal(0, 0.02, 10_000).astype(np.float32),
            # exact ties between two bf16 neighbours: 1 + 2^-8 rounds down (even), 1 + 3·2^-8 up
            np.array([1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8), 0.0, 0.015625], dtype=np.float32),
        ]
    )
    got = in_view(torch.from_numpy(x), "bf16").numpy()
    assert np.array_equal(got, bf16_round(x))
    assert got[-5:].tolist() == [1.0, 1 + 4 * 2**-8, -1.0, 0.0, 0.015625]
    assert not np.array_equal(got, x)


def test_stored_view_is_fp32_without_a_copy():
    t = torch.randn(4)
    assert in_view(t, "stored") is t
    assert in_view(t.to(torch.bfloat16), "stored").dtype == torch.float32
    with pytest.raises(ValueError, match="unknown view 'fp8'"):
        in_view(t, "fp8")  # type: ignore[arg-type]


def test_delta_and_shape_mismatch():
    theta0 = torch.tensor([1.0, 2.0, 3.0])
    theta = torch.tensor([1.5, 2.0, 2.0], dtype=torch.bfloat16)
    assert weight_delta(theta0, theta).tolist() == [0.5, 0.0, -1.0]
    with pytest.raises(ValueError, match=r"w: shape \(2,\) in the checkpoint but \(3,\) in the base"):
        weight_delta(theta0, torch.zeros(2), "w")


def test_sum_squares_is_float64():
    x = torch.full((3,), 1e20, dtype=torch.float32)  # x² overflows fp32
    assert sum_squares(x) == pytest.approx(3e40, rel=1e-6)
    big = torch.randn(3000, generator=torch.Generator().manual_seed(0))
    assert sum_squares(big) == pytest.approx(float(np.sum(big.numpy().astype(np.float64) ** 2)), rel=1e-12)


def test_parse_taus():
    assert parse_taus("1e-4,5e-4, 1e-3,1.5e-3,5e-3") == [1e-4, 5e-4, 1e-3, 1.5e-3, 5e-3]
    assert parse_taus("[0.001, 0.0001, 0.001]") == [1e-4, 1e-3]
    assert parse_taus(0.001) == parse_taus([0.001]) == parse_taus("0.001") == [0.001]
    assert parse_taus(None) == parse_taus("") == []
    assert [tau_key(t) for t in parse_taus("1.5e-3,1e-5")] == ["1e-05", "0.0015"]
    for bad, match in (
        ("0", "finite number > 0"),
        ("-1e-3", "> 0"),
        ("nan", "> 0"),
        ("x", "'x' is not a number"),
    ):
        with pytest.raises(ValueError, match=match):
            parse_taus(bad, "taus")
