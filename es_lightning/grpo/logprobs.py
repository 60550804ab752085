"""Pack (prompt, response) pairs into a right-padded batch and score them with a causal LM.

For a sequence x_0..x_{n−1} whose last tokens are the response o = x_s..x_{n−1} (s = prompt
length), the policy log-probabilities GRPO needs are

    log π_θ(x_j | x_<j) = log_softmax(z_{j−1} / τ)[x_j],   j = s .. n−1,

where z_{j−1} are the logits at position j−1 and τ the sampling temperature (the rollout engine
sampled from softmax(z/τ), so the importance ratio must use the same τ). The entropy of the
predictive distribution p = softmax(z_{j−1}/τ) at the same positions, H_j = −Σ_v p_v log p_v, is a
diagnostic (detached).

Right padding leaves the real tokens' log-probs unchanged: positions are counted from 0 and a
causal model never attends to the padding that follows a token.

Memory. The logits (B, L, V) come in the model's dtype; the float32 work is done one row at a
time as log p = z[x] − logsumexp(z), so the graph keeps at most one float32 copy of the logits
(none for a float32 model at τ = 1) and the entropy's temporaries live for one row only.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

__all__ = ["pack_sequences", "token_logprobs_and_entropy"]


def pack_sequences(
    prompts: Sequence[Sequence[int]],
    responses: Sequence[Sequence[int]],
    pad_id: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """Right-pad B (prompt, response) token-id pairs into one batch.

    Row i is ``prompts[i] + responses[i]`` followed by ``pad_id`` up to L = max_i of the row lengths.

    Args:
        prompts: B prompt token-id lists, each non-empty (the first response token needs a prefix).
        responses: B response token-id lists (may be empty); ``responses[i]`` goes with ``prompts[i]``.
        pad_id: Token id written into the padding.

    Returns:
        ``(input_ids, attention_mask, response_mask, L)``: (B, L) int64 ids; (B, L) int64 mask, 1 on
        prompt and response tokens; (B, L) int64 mask, 1 where position j holds a response token;
        and the padded length L.

    Raises:
        ValueError: if there are no pairs, the two lists differ in length, or a prompt is empty.
    """
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
    """Per-token log-probabilities (with graph) and predictive entropies (detached) in one forward.

    Position j of the outputs refers to token x_j: logp[b, j] = log softmax(z[b, j−1]/τ)[x_j] and
    entropy[b, j] = −Σ_v p_v log p_v of that distribution. Position 0 has no prefix and holds 0;
    logp is also 0 on padding (attention_mask 0) and entropy is 0 wherever response_mask is 0.

    Args:
        model: HF causal LM; ``model(input_ids=..., attention_mask=...).logits`` is (B, L, V).
        input_ids: (B, L) right-padded token ids (see :func:`pack_sequences`).
        attention_mask: (B, L) 1 on real tokens, 0 on padding.
        response_mask: (B, L) 1 on response tokens.
        temperature: τ > 0, the sampling temperature the logits are divided by.

    Returns:
        ``(logp, entropy)``, both (B, L) float32.

    Raises:
        ValueError: if the inputs are not 2-D with equal shapes or ``temperature`` is not positive.
    """
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
