"""The optimisation half of one GRPO update: μ AdamW steps of the clipped objective on one batch,
micro-batches accumulating, π_old recomputed when μ > 1, gradients clipped, the schedule followed."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from es_lightning.grpo.logprobs import token_logprobs_and_entropy
from es_lightning.grpo.loss import GRPOLoss

if TYPE_CHECKING:
    from lightning.fabric import Fabric
    from lightning.fabric.wrappers import _FabricModule, _FabricOptimizer


@dataclass(frozen=True)
class PolicyBatch:
    """The sampled responses of one update, packed: S sequences of length L (prompt + response)."""

    input_ids: torch.Tensor  # (S, L)
    attention: torch.Tensor  # (S, L)
    response_mask: torch.Tensor  # (S, L), 1 on response tokens
    advantages: torch.Tensor  # (S,), Â of each sequence

    def on(self, device: torch.device, rows: slice) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``rows``' input ids, attention and response mask on ``device``, each (s, L)."""
        return (
            self.input_ids[rows].to(device),
            self.attention[rows].to(device),
            self.response_mask[rows].to(device),
        )


def optimize_policy(
    fabric: Fabric,
    model: _FabricModule,
    optimizer: _FabricOptimizer,
    loss_fn: GRPOLoss,
    batch: PolicyBatch,
    learning_rates: Sequence[float],
    *,
    temperature: float,
    micro_batch_size: int,
    max_grad_norm: float | None,
    reference: torch.nn.Module | None = None,
) -> dict[str, float]:
    """One optimizer step per entry of ``learning_rates`` on one batch; the first step's statistics."""
    inner_iterations = len(learning_rates)
    total_tokens = float(batch.response_mask.sum())
    chunks = [slice(i, i + micro_batch_size) for i in range(0, len(batch.input_ids), micro_batch_size)]
    old_logps, ref_logps = _fixed_logps(
        fabric, model, reference, batch, chunks, inner_iterations > 1, temperature
    )
    sums: dict[str, float] = dict.fromkeys(("loss", "clip_frac", "kl", "entropy", "grad_norm"), 0.0)
    for it, lr in enumerate(learning_rates):
        for j, rows in enumerate(chunks):
            ids, att, mask = batch.on(fabric.device, rows)
            last = j == len(chunks) - 1
            with fabric.no_backward_sync(model, enabled=not last), fabric.autocast():
                logp, entropy = token_logprobs_and_entropy(model, ids, att, mask, temperature)
                old = old_logps[j]
                loss, st = loss_fn(
                    logp,
                    logp.detach() if old is None else old,
                    batch.advantages[rows].to(fabric.device),
                    mask.float(),
                    ref_logp=ref_logps[j],
                    num_tokens=total_tokens,
                    num_sequences=float(batch.input_ids.shape[0]),
                )
                fabric.backward(loss)
            if it == 0:
                tokens = float(mask.sum())
                sums["entropy"] += float((entropy * mask).sum())
                sums["clip_frac"] += st.clip_frac * tokens
                sums["kl"] += st.kl * tokens
                sums["loss"] += st.loss
        norm = _step(fabric, model, optimizer, lr, max_grad_norm)
        if it == 0:
            sums["grad_norm"], sums["lr"] = norm, lr
    denom = max(total_tokens, 1.0)
    return {**sums, **{k: sums[k] / denom for k in ("entropy", "clip_frac", "kl")}}


def _fixed_logps(
    fabric: Fabric,
    model: _FabricModule,
    reference: torch.nn.Module | None,
    batch: PolicyBatch,
    chunks: list[slice],
    recompute_old: bool,
    temperature: float,
) -> tuple[list[torch.Tensor | None], list[torch.Tensor | None]]:
    """Per micro-batch, log π_old (μ > 1) and log π_ref (with a reference) before the first step."""
    old_logps: list[torch.Tensor | None] = [None] * len(chunks)
    ref_logps: list[torch.Tensor | None] = [None] * len(chunks)
    if recompute_old or reference is not None:
        with torch.no_grad(), fabric.autocast():
            for j, rows in enumerate(chunks):
                ids, att, mask = batch.on(fabric.device, rows)
                if recompute_old:
                    old_logps[j] = token_logprobs_and_entropy(model, ids, att, mask, temperature)[0]
                if reference is not None:
                    ref_logps[j] = token_logprobs_and_entropy(reference, ids, att, mask, temperature)[0]
    return old_logps, ref_logps


def _step(
    fabric: Fabric, model: _FabricModule, optimizer: _FabricOptimizer, lr: float, max_grad_norm: float | None
) -> float:
    """Clip the gradients, step with η = ``lr``, zero them; the norm before clipping."""
    if max_grad_norm is not None:
        norm = fabric.clip_gradients(model, optimizer, max_norm=max_grad_norm)
        assert norm is not None  # with max_norm, Fabric returns the total norm
    else:
        squares = [p.grad.float().square().sum() for p in model.parameters() if p.grad is not None]
        norm = torch.sqrt(functools.reduce(torch.add, squares))  # the sum in parameter order
    for group in optimizer.param_groups:
        group["lr"] = lr
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return float(norm)
