"""Group-relative advantages: hand-worked numbers per mode, zero-variance groups, errors."""

import math

import pytest
import torch

from es_lightning.grpo import compute_advantages

S3 = math.sqrt(3.0)


def test_group_hand_worked():
    # Row 0: mean 0.5, population std 0.5 -> ±1.
    # Row 1: mean 0.25, deviations (-.25, -.25, -.25, .75), var = (3·.0625 + .5625)/4 = .1875,
    #        std = sqrt(3)/4 -> (-1/sqrt3, -1/sqrt3, -1/sqrt3, sqrt3).
    r = torch.tensor([[1.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 1.0]])
    a = compute_advantages(r, "group", eps=0.0)
    assert a.dtype == torch.float32 and a.shape == (2, 4)
    expected = torch.tensor([[1.0, -1.0, -1.0, 1.0], [-1 / S3, -1 / S3, -1 / S3, S3]])
    torch.testing.assert_close(a, expected, rtol=0, atol=1e-6)
    # Default eps only perturbs at the 1e-6 level; group is the default mode.
    torch.testing.assert_close(compute_advantages(r), expected, rtol=1e-5, atol=1e-5)


def test_group_uses_population_std_not_unbiased():
    # G = 2, rewards (0, 1): ddof=0 std = 0.5 -> ±1; TRL's ddof=1 would give ±1/sqrt2.
    a = compute_advantages(torch.tensor([[0.0, 1.0]]), "group", eps=0.0)
    torch.testing.assert_close(a, torch.tensor([[-1.0, 1.0]]))


def test_batch_hand_worked():
    # Group means (1, 1) -> centred ((-1, 1), (0, 0)); batch rewards (0, 2, 1, 1) have mean 1,
    # var (1 + 1 + 0 + 0)/4 = 0.5, std = 1/sqrt2 -> ((-sqrt2, sqrt2), (0, 0)).
    r = torch.tensor([[0.0, 2.0], [1.0, 1.0]])
    a = compute_advantages(r, "batch", eps=0.0)
    s2 = math.sqrt(2.0)
    torch.testing.assert_close(a, torch.tensor([[-s2, s2], [0.0, 0.0]]), rtol=0, atol=1e-6)
    # It differs from group mode, which rescales row 0 to ±1.
    torch.testing.assert_close(
        compute_advantages(r, "group", eps=0.0), torch.tensor([[-1.0, 1.0], [0.0, 0.0]])
    )


def test_batch_baseline_is_group_mean():
    # Rows with different means: the baseline is per row, the scale is the whole batch's std.
    r = torch.tensor([[0.0, 2.0], [10.0, 12.0]])
    std = torch.tensor([0.0, 2.0, 10.0, 12.0]).std(correction=0).item()
    a = compute_advantages(r, "batch", eps=0.0)
    torch.testing.assert_close(a, torch.tensor([[-1.0, 1.0], [-1.0, 1.0]]) / std)


def test_none_and_unscaled():
    r = torch.tensor([[0.0, 2.0], [1.0, 3.0], [5.0, 5.0]])
    expected = torch.tensor([[-1.0, 1.0], [-1.0, 1.0], [0.0, 0.0]])
    torch.testing.assert_close(compute_advantages(r, "none"), expected)
    torch.testing.assert_close(compute_advantages(r, "group", scale=False), expected)
    torch.testing.assert_close(compute_advantages(r, "batch", scale=False), expected)


@pytest.mark.parametrize("mode", ["group", "batch", "none"])
@pytest.mark.parametrize("eps", [0.0, 1e-6])
def test_zero_variance_groups_are_exact_zeros(mode, eps):
    # 0.1 is not exact in float: r − mean could be ±1 ulp, which /eps would blow up.
    r = torch.tensor([[0.1, 0.1, 0.1], [0.3, 0.3, 0.3], [0.0, 1.0, 0.0]])
    a = compute_advantages(r, mode, eps=eps)
    assert torch.isfinite(a).all()
    assert torch.equal(a[:2], torch.zeros(2, 3))
    assert a[2].abs().sum() > 0
    # All-equal batch (batch std = 0) and G = 1 (std over one response is 0).
    assert torch.equal(compute_advantages(torch.full((2, 3), 0.7), mode, eps=eps), torch.zeros(2, 3))
    assert torch.equal(compute_advantages(torch.tensor([[1.0], [0.0]]), mode, eps=eps), torch.zeros(2, 1))


def test_accepts_int_and_float64_returns_float32():
    a = compute_advantages(torch.tensor([[0, 1], [1, 1]]), "none")
    assert a.dtype == torch.float32
    torch.testing.assert_close(a, torch.tensor([[-0.5, 0.5], [0.0, 0.0]]))
    assert compute_advantages(torch.tensor([[0.0, 1.0]], dtype=torch.float64)).dtype == torch.float32


@pytest.mark.parametrize("shape", [(4,), (2, 2, 2), (0, 4), (3, 0)])
def test_shape_errors(shape):
    with pytest.raises(ValueError, match="rewards must have shape"):
        compute_advantages(torch.zeros(shape))


def test_argument_errors():
    r = torch.zeros(2, 2)
    with pytest.raises(ValueError, match="unknown mode"):
        compute_advantages(r, "rank")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="eps"):
        compute_advantages(r, eps=-1.0)
    with pytest.raises(ValueError, match="finite"):
        compute_advantages(torch.tensor([[0.0, float("nan")]]))
    with pytest.raises(ValueError, match="torch.Tensor"):
        compute_advantages([[0.0, 1.0]])  # type: ignore[arg-type]
