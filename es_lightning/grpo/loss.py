"""The clipped GRPO surrogate with an optional k3 KL penalty, aggregated over response tokens.

For response i with advantage Â_i and token t (DeepSeekMath's objective, ε_high from DAPO)::

    ρ_{i,t} = exp(logp − old_logp)
    l_{i,t} = −min(ρ_{i,t}·Â_i, clip(ρ_{i,t}, 1 − ε_low, 1 + ε_high)·Â_i) + β·KL_{i,t}
    KL_{i,t} = exp(ref − logp) − (ref − logp) − 1                  (k3, Schulman; ≥ 0)

``token_mean`` (DAPO, Dr. GRPO) divides Σ M·l by the token count (``num_tokens``: the whole batch's,
so micro-batches add up); ``sequence_mean`` (original GRPO) averages per sequence first.
``clip_frac`` is the share of response tokens on the clipped branch. Padding is masked before
``exp``. :class:`GRPOLoss` holds the settings, checked once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

import torch

from es_lightning.checked import checked, field_values, invalid_settings, one_of, refuse_invalid

LossAggregation = Literal["token_mean", "sequence_mean"]


@dataclass
class LossStats:
    """Diagnostics of one :func:`grpo_loss` call (python floats, means over its response tokens)."""

    loss: float
    clip_frac: float
    """Fraction of response tokens whose clipped branch is active (zero gradient)."""
    kl: float
    """Mean k3 KL to the reference over response tokens; 0.0 without ``ref_logp``."""
    ratio_mean: float
    """Mean ρ = π_θ/π_old over response tokens; 1.0 when there are none."""


def k3_kl(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of KL(π_θ ‖ π_ref), unbiased for tokens sampled from π_θ and ≥ 0
    (http://joschu.net/blog/kl-approx.html)."""
    log_ratio = ref_logp - logp  # log(π_ref / π_θ)
    return log_ratio.exp() - log_ratio - 1.0


def grpo_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_eps: float = 0.2,
    clip_eps_high: float | None = None,
    ref_logp: torch.Tensor | None = None,
    beta: float = 0.0,
    aggregation: LossAggregation = "token_mean",
    num_tokens: float | None = None,
    num_sequences: float | None = None,
) -> tuple[torch.Tensor, LossStats]:
    """Clipped GRPO/PPO surrogate loss (to minimise) of B sequences × T tokens and its
    :class:`LossStats`; ``ref_logp`` is needed when ``beta > 0``, ``num_tokens``/``num_sequences``
    replace the divisor. ValueError on bad shapes or settings.
    """
    _check_arguments(logp, old_logp, advantages, mask, ref_logp, num_tokens, num_sequences)
    _check_settings(clip_eps, clip_eps_high, beta, aggregation, has_reference=ref_logp is not None)
    eps_low = clip_eps
    eps_high = clip_eps if clip_eps_high is None else clip_eps_high

    m = mask.to(dtype=logp.dtype)  # (B, T)
    on = m > 0  # (B, T)
    zero = torch.zeros_like(logp)
    adv = advantages.detach().to(logp.dtype).unsqueeze(1)  # (B, 1)

    log_ratio = torch.where(on, logp - old_logp.detach(), zero)  # (B, T), 0 on padding
    ratio = log_ratio.exp()  # (B, T)
    surr = ratio * adv  # (B, T)
    surr_clipped = ratio.clamp(1.0 - eps_low, 1.0 + eps_high) * adv  # (B, T)
    per_token = -torch.minimum(surr, surr_clipped)  # (B, T)

    kl = None
    if ref_logp is not None:
        # (B, T), 0 on padding whatever values the padding holds
        kl = k3_kl(torch.where(on, logp, zero), torch.where(on, ref_logp.detach(), zero))
        if beta > 0:
            per_token = per_token + beta * kl

    per_token = per_token * m  # (B, T)
    if aggregation == "token_mean":
        denom = m.sum().clamp(min=1.0) if num_tokens is None else float(num_tokens)
        loss = per_token.sum() / denom
    else:
        per_seq = per_token.sum(dim=1) / m.sum(dim=1).clamp(min=1.0)  # (B,), 0 for empty rows
        loss = per_seq.sum() / (logp.shape[0] if num_sequences is None else float(num_sequences))
    return loss, _statistics(loss, ratio, adv, m, kl, eps_low, eps_high)


def _check_arguments(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    ref_logp: torch.Tensor | None,
    num_tokens: float | None,
    num_sequences: float | None,
) -> None:
    """The tensors' shapes and the normalisers of one :func:`grpo_loss` call."""
    if logp.ndim != 2:
        raise ValueError(f"grpo_loss: logp must have shape (B, T), got {tuple(logp.shape)}")
    for name, x in (("old_logp", old_logp), ("mask", mask), ("ref_logp", ref_logp)):
        if x is not None and x.shape != logp.shape:
            raise ValueError(
                f"grpo_loss: {name} must have the shape of logp {tuple(logp.shape)}, got {tuple(x.shape)}"
            )
    if advantages.shape != logp.shape[:1]:
        raise ValueError(
            f"grpo_loss: advantages must have shape (B,) = {tuple(logp.shape[:1])}, got {tuple(advantages.shape)}"
        )
    for name, n in (("num_tokens", num_tokens), ("num_sequences", num_sequences)):
        if n is not None and not n > 0:
            raise ValueError(f"grpo_loss: {name} must be > 0, got {n}")


def _check_settings(
    clip_eps: float, clip_eps_high: float | None, beta: float, aggregation: str, has_reference: bool
) -> None:
    """ε, ε_high, β and the aggregation of one call, by :class:`GRPOLoss`'s rules."""
    values = dict(clip_eps=clip_eps, clip_eps_high=clip_eps_high, beta=beta, loss_aggregation=aggregation)
    bad = invalid_settings(values, GRPOLoss)
    if bad:
        raise ValueError(f"grpo_loss: invalid {'; '.join(bad)}")
    if beta > 0 and not has_reference:
        raise ValueError("grpo_loss: beta > 0 needs ref_logp (the reference log-probs for the KL term)")


def _statistics(
    loss: torch.Tensor,  # ()
    ratio: torch.Tensor,  # (B, T)
    adv: torch.Tensor,  # (B, 1)
    m: torch.Tensor,  # (B, T)
    kl: torch.Tensor | None,  # (B, T)
    eps_low: float,
    eps_high: float,
) -> LossStats:
    """The :class:`LossStats` of one call, read from the device in one sync."""
    with torch.no_grad():
        n = m.sum()
        clipped = ((ratio > 1.0 + eps_high) & (adv > 0)) | ((ratio < 1.0 - eps_low) & (adv < 0))  # (B, T)
        stats = torch.stack(
            [
                loss.detach(),
                (clipped.to(m.dtype) * m).sum() / n.clamp(min=1.0),
                (kl * m).sum() / n.clamp(min=1.0) if kl is not None else n.new_zeros(()),
                torch.where(n > 0, (ratio * m).sum() / n.clamp(min=1.0), torch.ones_like(n)),
            ]
        ).tolist()  # one device sync
    return LossStats(loss=stats[0], clip_frac=stats[1], kl=stats[2], ratio_mean=stats[3])


@dataclass(frozen=True)
class GRPOLoss:
    """The clipped GRPO objective with its settings, checked once; calling it is :func:`grpo_loss`."""

    clip_eps: float = checked(0.2, lambda eps: 0 < eps < 1, "in (0, 1)")
    clip_eps_high: float | None = checked(None, lambda eps: eps is None or eps > 0, "null or > 0")
    beta: float = checked(0.0, lambda beta: beta >= 0, ">= 0")
    loss_aggregation: LossAggregation = one_of("token_mean", get_args(LossAggregation))

    def __post_init__(self) -> None:
        refuse_invalid("GRPOLoss", field_values(self), GRPOLoss)

    def __call__(
        self,
        logp: torch.Tensor,
        old_logp: torch.Tensor,
        advantages: torch.Tensor,
        mask: torch.Tensor,
        ref_logp: torch.Tensor | None = None,
        num_tokens: float | None = None,
        num_sequences: float | None = None,
    ) -> tuple[torch.Tensor, LossStats]:
        """The loss and its :class:`LossStats` (:func:`grpo_loss`'s arguments)."""
        return grpo_loss(
            logp,
            old_logp,
            advantages,
            mask,
            clip_eps=self.clip_eps,
            clip_eps_high=self.clip_eps_high,
            ref_logp=ref_logp,
            beta=self.beta,
            aggregation=self.loss_aggregation,
            num_tokens=num_tokens,
            num_sequences=num_sequences,
        )
