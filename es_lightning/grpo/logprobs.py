"""Pack (prompt, response) pairs into a right-padded batch and score them with a causal LM.

For a response starting at position s::

    log π_θ(x_j | x_<j) = log_softmax(z_{j−1} / τ)[x_j],   j = s .. n−1

τ the sampling temperature (the engine sampled from softmax(z/τ), so the ratio must use it); the
entropy at the same positions is a detached diagnostic. The float32 work runs one row at a time,
so the graph keeps at most one float32 copy of the logits.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F


def pack_sequences(
    prompts: Sequence[Sequence[int]],
    responses: Sequence[Sequence[int]],
    pad_id: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """Right-pad B (prompt, response) pairs: ``(input_ids, attention_mask, response_mask, L)``."""
    if len(prompts) != len(responses):
        raise ValueError(
            f"pack_sequences: prompts and responses must have the same length, got {len(prompts)} and {len(responses)}"
        )
    if len(prompts) == 0:
        raise ValueError("pack_sequences: prompts is empty (need at least one pair)")
    for i, p in enumerate(prompts):
        if len(p) == 0:
            raise ValueError(
                f"pack_sequences: prompts[{i}] is empty; every response needs a non-empty prompt"
            )
    length = max(len(p) + len(r) for p, r in zip(prompts, responses, strict=True))
    batch = len(prompts)
    input_ids = torch.full((batch, length), pad_id, dtype=torch.long)  # (B, L)
    attention_mask = torch.zeros((batch, length), dtype=torch.long)  # (B, L)
    response_mask = torch.zeros((batch, length), dtype=torch.long)  # (B, L)
    for i, (p, r) in enumerate(zip(prompts, responses, strict=True)):
        s, n = len(p), len(p) + len(r)
        input_ids[i, :n] = torch.tensor([*p, *r], dtype=torch.long)
        attention_mask[i, :n] = 1
        response_mask[i, s:n] = 1
    return input_ids, attention_mask, response_mask, length


def token_logprobs_and_entropy(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    response_mask: torch.Tensor,
    temperature: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token log-probabilities (with graph) and entropies (detached), (B, L), in one forward."""
    if input_ids.ndim != 2:
        raise ValueError(
            f"token_logprobs_and_entropy: input_ids must have shape (B, L), got {tuple(input_ids.shape)}"
        )
    for name, x in (("attention_mask", attention_mask), ("response_mask", response_mask)):
        if x.shape != input_ids.shape:
            raise ValueError(
                f"token_logprobs_and_entropy: {name} must have the shape of input_ids "
                f"{tuple(input_ids.shape)}, got {tuple(x.shape)}"
            )
    if not temperature > 0:
        raise ValueError(f"token_logprobs_and_entropy: temperature must be > 0, got {temperature}")

    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits  # (B, L, V)
    targets = input_ids[:, 1:]  # (B, L-1): token j+1 is predicted by the logits at j
    logps, entropies = [], []
    for b in range(input_ids.shape[0]):
        z = logits[b, :-1].float()  # (L-1, V)
        if temperature != 1.0:
            z = z / temperature
        lse = torch.logsumexp(z, dim=-1)  # (L-1,)
        logps.append(z.gather(-1, targets[b].unsqueeze(-1)).squeeze(-1) - lse)  # (L-1,)
        with torch.no_grad():
            logp_v = z.detach() - lse.detach().unsqueeze(-1)  # (L-1, V)
            entropies.append(-(logp_v.exp() * logp_v).sum(-1))  # (L-1,)
            del logp_v
    logp = F.pad(torch.stack(logps), (1, 0))  # (B, L), position 0 = 0
    entropy = F.pad(torch.stack(entropies), (1, 0))  # (B, L)
    logp = logp * attention_mask.to(logp.dtype)
    entropy = torch.where(response_mask.bool(), entropy, torch.zeros_like(entropy))
    return logp, entropy
