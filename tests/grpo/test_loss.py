"""The clipped GRPO loss: a hand-computed example, clipping, k3 KL, micro-batching, edge cases."""

import math

import pytest
import torch

from es_lightning.grpo import LossStats, grpo_loss, k3_kl

# B = 2 sequences, T = 3 tokens; row 1 has one padding token (garbage values there on purpose).
LOGP = [[-1.0, -0.5, -2.0], [-0.3, -1.2, 3.0]]
OLD = [[-1.0, -0.9, -1.5], [-0.6, -0.7, -3.0]]
REF = [[-1.1, -0.4, -1.8], [-0.2, -1.0, 7.0]]
MASK = [[1, 1, 1], [1, 1, 0]]
ADV = [1.5, -0.5]


def _reference(eps_low, eps_high, beta, use_ref=True):
    """Plain-python per-token losses, ratios, clip flags and KLs over the response tokens."""
    rows = []
    for b in range(2):
        row = []
        for t in range(3):
            if not MASK[b][t]:
                continue
            rho = math.exp(LOGP[b][t] - OLD[b][t])
            a = ADV[b]
            clipped_rho = min(max(rho, 1 - eps_low), 1 + eps_high)
            obj = min(rho * a, clipped_rho * a)
            d = REF[b][t] - LOGP[b][t]
            kl = math.exp(d) - d - 1 if use_ref else 0.0
            is_clipped = (rho > 1 + eps_high and a > 0) or (rho < 1 - eps_low and a < 0)
            row.append((-obj + beta * kl, rho, is_clipped, kl))
        rows.append(row)
    return rows


def _tensors(requires_grad=True):
    logp = torch.tensor(LOGP, requires_grad=requires_grad)
    return logp, torch.tensor(OLD), torch.tensor(ADV), torch.tensor(MASK), torch.tensor(REF)


@pytest.mark.parametrize("aggregation", ["token_mean", "sequence_mean"])
def test_hand_computed_example(aggregation):
    rows = _reference(0.2, 0.2, beta=0.1)
    toks = [tok for row in rows for tok in row]
    if aggregation == "token_mean":
        expected = sum(tok[0] for tok in toks) / 5
    else:
        expected = sum(sum(tok[0] for tok in row) / len(row) for row in rows) / 2
    logp, old, adv, mask, ref = _tensors()
    loss, stats = grpo_loss(
        logp, old, adv, mask, clip_eps=0.2, ref_logp=ref, beta=0.1, aggregation=aggregation
    )
    assert loss.shape == ()
    assert loss.item() == pytest.approx(expected, abs=1e-6)
    assert isinstance(stats, LossStats)
    assert all(isinstance(v, float) for v in (stats.loss, stats.clip_frac, stats.kl, stats.ratio_mean))
    assert stats.loss == pytest.approx(expected, abs=1e-6)
    # Two of the five response tokens are clipped: row 0 t=1 (ρ=e^.4 > 1.2, A>0), row 1 t=1 (ρ=e^-.5 < .8, A<0).
    assert stats.clip_frac == pytest.approx(sum(tok[2] for tok in toks) / 5) == pytest.approx(0.4)
    assert stats.kl == pytest.approx(sum(tok[3] for tok in toks) / 5, abs=1e-6)
    assert stats.ratio_mean == pytest.approx(sum(tok[1] for tok in toks) / 5, abs=1e-6)


def test_aggregations_differ_and_default_is_token_mean():
    logp, old, adv, mask, _ = _tensors()
    token, _ = grpo_loss(logp, old, adv, mask)
    explicit, _ = grpo_loss(logp, old, adv, mask, aggregation="token_mean")
    seq, _ = grpo_loss(logp, old, adv, mask, aggregation="sequence_mean")
    assert token.item() == explicit.item()
    assert abs(token.item() - seq.item()) > 1e-3


def test_clipped_tokens_get_zero_gradient():
    # Ratios (1.5, 0.5, 1.0) per row; row 0 has A > 0, row 1 A < 0.
    old = torch.zeros(2, 3)
    logp = torch.log(torch.tensor([[1.5, 0.5, 1.0], [1.5, 0.5, 1.0]])).requires_grad_()
    adv = torch.tensor([1.0, -1.0])
    loss, stats = grpo_loss(logp, old, adv, torch.ones(2, 3), clip_eps=0.2)
    loss.backward()
    clipped = torch.tensor([[True, False, False], [False, True, False]])
    assert torch.all(logp.grad[clipped] == 0)
    assert torch.all(logp.grad[~clipped] != 0)
    # Unclipped tokens: ∂l/∂logp = −ρ·A, divided by the 6 tokens.
    rho = torch.tensor([[1.5, 0.5, 1.0], [1.5, 0.5, 1.0]])
    torch.testing.assert_close(logp.grad[~clipped], (-rho * adv[:, None] / 6)[~clipped])
    assert stats.clip_frac == pytest.approx(2 / 6)


def test_asymmetric_clip_eps_high():
    # ρ = 1.25 with A > 0 is clipped by ε = 0.2 but not by ε_high = 0.28; ρ = 0.75 with A < 0 is
    # clipped by ε_low = 0.2 either way.
    rho = torch.tensor([[1.25], [0.75]])
    adv = torch.tensor([1.0, -1.0])
    grads, fracs = [], []
    for high in (None, 0.28):
        logp = rho.log().requires_grad_()
        loss, stats = grpo_loss(
            logp, torch.zeros(2, 1), adv, torch.ones(2, 1), clip_eps=0.2, clip_eps_high=high
        )
        loss.backward()
        grads.append(logp.grad.clone())
        fracs.append(stats.clip_frac)
    assert grads[0][0, 0] == 0 and grads[1][0, 0] != 0
    assert grads[0][1, 0] == 0 and grads[1][1, 0] == 0
    assert fracs == [pytest.approx(1.0), pytest.approx(0.5)]
    # With ε_high the upper branch is ρ·A unclipped: loss = −(1.25·1 + 0.8·(−1)) / 2.
    loss, _ = grpo_loss(rho.log(), torch.zeros(2, 1), adv, torch.ones(2, 1), clip_eps=0.2, clip_eps_high=0.28)
    assert loss.item() == pytest.approx(-(1.25 - 0.8) / 2)


def test_k3_kl_formula_nonnegative_and_zero_at_equality():
    g = torch.Generator().manual_seed(0)
    logp = torch.randn(4, 7, generator=g) * 3
    ref = torch.randn(4, 7, generator=g) * 3
    kl = k3_kl(logp, ref)
    torch.testing.assert_close(kl, torch.exp(ref - logp) - (ref - logp) - 1)
    assert torch.all(kl >= 0)
    assert torch.equal(k3_kl(logp, logp), torch.zeros(4, 7))


def test_kl_term_in_loss_value_and_gradient():
    g = torch.Generator().manual_seed(1)
    logp = (torch.randn(3, 4, generator=g) - 2).requires_grad_()
    ref = torch.randn(3, 4, generator=g) - 2
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]])
    m = mask.float()
    # A = 0: the loss is β times the token mean of k3, its gradient β·(1 − exp(ref − logp)) / N.
    loss, stats = grpo_loss(logp, logp.detach(), torch.zeros(3), mask, ref_logp=ref, beta=0.5)
    loss.backward()
    k3 = torch.exp(ref - logp.detach()) - (ref - logp.detach()) - 1
    assert loss.item() == pytest.approx(0.5 * (k3 * m).sum().item() / 7, rel=1e-6)
    assert stats.kl == pytest.approx((k3 * m).sum().item() / 7, rel=1e-6)
    torch.testing.assert_close(logp.grad, 0.5 * (1 - torch.exp(ref - logp.detach())) * m / 7)
    # logp == ref: no KL; ref without beta only feeds the statistic.
    same, st = grpo_loss(logp, logp.detach(), torch.ones(3), mask, ref_logp=logp.detach(), beta=0.5)
    plain, st0 = grpo_loss(logp, logp.detach(), torch.ones(3), mask)
    assert same.item() == pytest.approx(plain.item()) and st.kl == 0.0 and st0.kl == 0.0
    monitored, st1 = grpo_loss(logp, logp.detach(), torch.ones(3), mask, ref_logp=ref)
    assert monitored.item() == pytest.approx(plain.item()) and st1.kl > 0


@pytest.mark.parametrize("aggregation", ["token_mean", "sequence_mean"])
def test_micro_batches_add_up_to_the_full_batch(aggregation):
    g = torch.Generator().manual_seed(2)
    logp = (torch.randn(4, 5, generator=g) * 0.3 - 1).requires_grad_()
    old = logp.detach() + torch.randn(4, 5, generator=g) * 0.3  # some tokens clip
    ref = logp.detach() + torch.randn(4, 5, generator=g) * 0.3
    adv = torch.tensor([1.0, -0.5, 2.0, -1.5])
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0]])
    full, _ = grpo_loss(logp, old, adv, mask, ref_logp=ref, beta=0.05, aggregation=aggregation)
    full.backward()
    full_grad = logp.grad.clone()
    logp.grad = None
    split = dict(num_tokens=float(mask.sum())) if aggregation == "token_mean" else dict(num_sequences=4.0)
    total = 0.0
    for sl in (slice(0, 2), slice(2, 4)):
        part, _ = grpo_loss(
            logp[sl],
            old[sl],
            adv[sl],
            mask[sl],
            ref_logp=ref[sl],
            beta=0.05,
            aggregation=aggregation,
            **split,
        )
        part.backward()
        total += part.item()
    assert total == pytest.approx(full.item(), abs=1e-6)
    torch.testing.assert_close(logp.grad, full_grad)
    # Without the batch count each half is normalised by its own tokens/rows: the sum differs.
    halves = sum(
        grpo_loss(logp[sl], old[sl], adv[sl], mask[sl], ref_logp=ref[sl], beta=0.05, aggregation=aggregation)[
            0
        ].item()
        for sl in (slice(0, 2), slice(2, 4))
    )
    assert abs(halves - full.item()) > 1e-3


@pytest.mark.parametrize("aggregation", ["token_mean", "sequence_mean"])
def test_empty_response_rows_give_no_nan(aggregation):
    logp = torch.tensor([[-1.0, -0.5], [0.0, 0.0]], requires_grad=True)
    old = torch.tensor([[-0.8, -0.5], [-float("inf"), float("nan")]])  # garbage on the empty row
    ref = torch.tensor([[-1.0, -0.7], [float("inf"), -float("inf")]])
    mask = torch.tensor([[1, 1], [0, 0]])
    loss, stats = grpo_loss(
        logp, old, torch.tensor([1.0, 1.0]), mask, ref_logp=ref, beta=0.1, aggregation=aggregation
    )
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(logp.grad).all()
    assert torch.all(logp.grad[1] == 0)
    assert all(math.isfinite(v) for v in (stats.clip_frac, stats.kl, stats.ratio_mean))
    # sequence_mean: the empty row counts as a zero in the mean over 2 rows.
    if aggregation == "sequence_mean":
        only, _ = grpo_loss(
            logp[:1],
            old[:1],
            torch.tensor([1.0]),
            mask[:1],
            ref_logp=ref[:1],
            beta=0.1,
            aggregation=aggregation,
        )
        assert loss.item() == pytest.approx(only.item() / 2)
    # No response tokens at all: loss 0, ratio_mean 1.
    zero, st = grpo_loss(logp, old, torch.tensor([1.0, 1.0]), torch.zeros(2, 2), aggregation=aggregation)
    assert zero.item() == 0.0 and st.ratio_mean == 1.0 and st.clip_frac == 0.0


def test_argument_errors():
    logp, old, adv, mask, ref = _tensors()
    with pytest.raises(ValueError, match="beta > 0 needs ref_logp"):
        grpo_loss(logp, old, adv, mask, beta=0.1)
    with pytest.raises(ValueError, match="old_logp"):
        grpo_loss(logp, old[:, :2], adv, mask)
    with pytest.raises(ValueError, match="mask"):
        grpo_loss(logp, old, adv, mask[:1])
    with pytest.raises(ValueError, match="ref_logp"):
        grpo_loss(logp, old, adv, mask, ref_logp=ref.T)
    with pytest.raises(ValueError, match="advantages"):
        grpo_loss(logp, old, adv[:, None], mask)
    with pytest.raises(ValueError, match="logp must have shape"):
        grpo_loss(logp[0], old[0], adv, mask[0])
    with pytest.raises(ValueError, match="aggregation"):
        grpo_loss(logp, old, adv, mask, aggregation="sum")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="num_tokens"):
        grpo_loss(logp, old, adv, mask, num_tokens=0)
    with pytest.raises(ValueError, match="num_sequences"):
        grpo_loss(logp, old, adv, mask, aggregation="sequence_mean", num_sequences=-1)
    with pytest.raises(ValueError, match="clip_eps"):
        grpo_loss(logp, old, adv, mask, clip_eps_high=-0.1)
    with pytest.raises(ValueError, match="beta"):
        grpo_loss(logp, old, adv, mask, ref_logp=ref, beta=-1.0)


def test_sequence_mean_is_the_papers_objective_on_unequal_lengths():
    """−(1/G) Σ_i (1/T_i) Σ_t min(ρ A, clip(ρ, 1−ε, 1+ε) A) for one group of G = 3, T_i = 1, 3, 4."""
    eps = 0.2
    log_ratios = [[0.3], [-0.4, 0.1, 0.0], [0.05, -0.3, 0.25, -0.1]]  # log ρ on each response token
    adv = [1.0, -1.5, 0.5]
    # Hand-worked by token (ρ = e^{log ρ}; clipped where ρ > 1.2 with A > 0 or ρ < 0.8 with A < 0):
    #   i=0: ρ=1.350 -> min(1.350, 1.2)·1 = 1.2 (clipped)
    #   i=1: ρ=0.670 -> min(-1.005, -1.2) = -1.2 (clipped); ρ=1.105 -> -1.658; ρ=1 -> -1.5
    #   i=2: ρ=1.051 -> 0.526; ρ=0.741 -> min(0.370, 0.4) = 0.370; ρ=1.284 -> min(0.642, 0.6) = 0.6
    #        (clipped); ρ=0.905 -> 0.452
    objective = []
    for row, a in zip(log_ratios, adv, strict=True):
        terms = []
        for lr in row:
            rho = math.exp(lr)
            terms.append(min(rho * a, min(max(rho, 1 - eps), 1 + eps) * a))
        objective.append(sum(terms) / len(terms))  # (1/T_i) Σ_t
    expected = -sum(objective) / 3  # −(1/G) Σ_i
    by_hand = (1.2 + (-1.2 - 1.65776 - 1.5) / 3 + (0.52564 + 0.37041 + 0.6 + 0.45242) / 4) / 3
    assert expected == pytest.approx(-by_hand, abs=1e-4) == pytest.approx(-0.07818, abs=1e-4)

    old = torch.full((3, 4), -1.0)
    old[0, 1:] = 9.0  # garbage on padding
    logp = old.clone()
    mask = torch.zeros(3, 4)
    for i, row in enumerate(log_ratios):
        for t, lr in enumerate(row):
            logp[i, t] = -1.0 + lr
            mask[i, t] = 1.0
    logp[1, 3] = 40.0  # garbage on padding: exp of it must never be taken
    logp.requires_grad_()
    loss, stats = grpo_loss(logp, old, torch.tensor(adv), mask, clip_eps=eps, aggregation="sequence_mean")
    assert loss.item() == pytest.approx(expected, abs=1e-6)
    assert stats.clip_frac == pytest.approx(3 / 8)
    token_mean = -(objective[0] * 1 + objective[1] * 3 + objective[2] * 4) / 8
    assert abs(loss.item() - token_mean) > 1e-2  # the token mean is a different number here

    # d loss / d log π(o_{i,t}) = −ρ·A / (G·T_i) on unclipped tokens, 0 on clipped tokens and padding.
    loss.backward()
    for i, (row, a) in enumerate(zip(log_ratios, adv, strict=True)):
        for t in range(4):
            if t >= len(row):
                want = 0.0
            else:
                rho = math.exp(row[t])
                clipped = (rho > 1 + eps and a > 0) or (rho < 1 - eps and a < 0)
                want = 0.0 if clipped else -rho * a / (3 * len(row))
            assert logp.grad[i, t].item() == pytest.approx(want, abs=1e-6), (i, t)
