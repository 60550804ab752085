"""The optimisation half of one GRPO update: μ AdamW steps of the clipped objective on one batch.

For each inner iteration, micro-batches of sequences accumulate gradients of

    L = −min(ρ_t A, clip(ρ_t, 1 − ε_low, 1 + ε_high) A) + β · KL_k3(π_θ ‖ π_ref),

(:func:`~es_lightning.grpo.loss.grpo_loss`), with π_old recomputed once before the first step when
μ > 1 (with μ = 1 the ratio is exactly 1) and π_ref's log-probabilities when β > 0; gradients are
clipped, the learning rate follows the schedule, and the optimizer steps. Returns the first
iteration's loss, clip fraction, KL, token entropy (per response token), gradient norm and
learning rate.
"""

from __future__ import annotations

from typing import Any

import torch

from es_lightning.grpo.logprobs import token_logprobs_and_entropy
from es_lightning.grpo.lora import seed_dropout
from es_lightning.grpo.loss import grpo_loss


def optimize_policy(
    self: Any,  # the GRPO strategy: its settings, model, optimizer, π_ref and lr_at (strategies/grpo.py)
    fabric: Any,
    input_ids: torch.Tensor,  # (S, L)
    attention: torch.Tensor,  # (S, L)
    response_mask: torch.Tensor,  # (S, L)
    advantages: torch.Tensor,  # (S,)
    temperature: float,
    step: int,
) -> dict[str, float]:
    """μ optimizer steps of the clipped GRPO objective on one batch of sampled responses
    (micro-batches accumulate into each step; the first iteration's statistics are returned)."""
    device = fabric.device
    if self.lora is not None:
        seed_dropout(self.lora, step, self.global_rank)
    total_tokens = float(response_mask.sum())
    n_seq = input_ids.shape[0]
    chunks = [slice(i, i + self.micro_batch_size) for i in range(0, n_seq, self.micro_batch_size)]
    old_logps: list[torch.Tensor | None] = [None] * len(chunks)
    ref_logps: list[torch.Tensor | None] = [None] * len(chunks)
    if self.inner_iterations > 1 or self.beta > 0:
        with torch.no_grad(), fabric.autocast():
            for j, sl in enumerate(chunks):
                ids, att, mask = (
                    input_ids[sl].to(device),
                    attention[sl].to(device),
                    response_mask[sl].to(device),
                )
                if self.inner_iterations > 1:
                    old_logps[j] = token_logprobs_and_entropy(self.model, ids, att, mask, temperature)[0]
                if self.reference is not None:
                    ref_logps[j] = token_logprobs_and_entropy(self.reference, ids, att, mask, temperature)[0]
    sums = dict.fromkeys(("loss", "clip_frac", "kl", "entropy", "grad_norm"), 0.0)
    for it in range(self.inner_iterations):
        for j, sl in enumerate(chunks):
            ids, att, mask = (
                input_ids[sl].to(device),
                attention[sl].to(device),
                response_mask[sl].to(device),
            )
            last = j == len(chunks) - 1
            with fabric.no_backward_sync(self.model, enabled=not last), fabric.autocast():
                logp, entropy = token_logprobs_and_entropy(self.model, ids, att, mask, temperature)
                old = logp.detach() if old_logps[j] is None else old_logps[j]
                loss, st = grpo_loss(
                    logp,
                    old,
                    advantages[sl].to(device),
                    mask.float(),
                    clip_eps=self.clip_eps,
                    clip_eps_high=self.clip_eps_high,
                    ref_logp=ref_logps[j],
                    beta=self.beta,
                    aggregation=self.loss_aggregation,
                    num_tokens=total_tokens,
                    num_sequences=float(n_seq),
                )
                fabric.backward(loss)
            if it == 0:
                tokens = float(mask.sum())
                sums["entropy"] += float((entropy * mask).sum())
                sums["clip_frac"] += st.clip_frac * tokens
                sums["kl"] += st.kl * tokens
                sums["loss"] += st.loss
        if self.max_grad_norm is not None:
            norm = fabric.clip_gradients(self.model, self.optimizer, max_norm=self.max_grad_norm)
        else:
            norm = torch.sqrt(
                sum(p.grad.float().square().sum() for p in self.model.parameters() if p.grad is not None)
            )
        if it == 0:
            sums["grad_norm"] = float(norm)
        lr = self.lr_at(step * self.inner_iterations + it)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        if it == 0:
            sums["lr"] = lr
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
    denom = max(total_tokens, 1.0)
    return {
        **sums,
        "entropy": sums["entropy"] / denom,
        "clip_frac": sums["clip_frac"] / denom,
        "kl": sums["kl"] / denom,
    }
