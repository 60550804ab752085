"""Packing and per-token log-probs/entropies against an unpadded per-sequence reference."""

import pytest
import torch

from es_lightning.grpo import pack_sequences, token_logprobs_and_entropy

PROMPTS = [[5, 6, 7], [8], [9, 10]]
RESPONSES = [[11, 12], [13, 14, 15, 16], []]


def test_pack_sequences_hand_written():
    ids, attn, resp, length = pack_sequences(PROMPTS, RESPONSES, pad_id=0)
    assert length == 5
    assert torch.equal(ids, torch.tensor([[5, 6, 7, 11, 12], [8, 13, 14, 15, 16], [9, 10, 0, 0, 0]]))
    assert torch.equal(attn, torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 1, 1], [1, 1, 0, 0, 0]]))
    assert torch.equal(resp, torch.tensor([[0, 0, 0, 1, 1], [0, 1, 1, 1, 1], [0, 0, 0, 0, 0]]))
    assert ids.dtype == attn.dtype == resp.dtype == torch.long


def test_pack_sequences_pads_with_pad_id():
    ids, attn, resp, length = pack_sequences([[1, 2], [3]], [[4], [5]], pad_id=99)
    assert length == 3
    assert torch.equal(ids, torch.tensor([[1, 2, 4], [3, 5, 99]]))
    assert torch.equal(attn, torch.tensor([[1, 1, 1], [1, 1, 0]]))
    assert torch.equal(resp, torch.tensor([[0, 0, 1], [0, 1, 0]]))


def test_pack_sequences_errors():
    with pytest.raises(ValueError, match="same length"):
        pack_sequences([[1]], [[2], [3]], pad_id=0)
    with pytest.raises(ValueError, match="empty"):
        pack_sequences([], [], pad_id=0)
    with pytest.raises(ValueError, match=r"prompts\[1\] is empty"):
        pack_sequences([[1], []], [[2], [3]], pad_id=0)


@pytest.fixture(scope="module")
def model(tiny_model_path):
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    m = AutoModelForCausalLM.from_pretrained(tiny_model_path, dtype=torch.float32)
    return m.eval()


def _reference(model, prompts, responses, temperature):
    """Each sequence on its own, no padding: log_softmax(z_{j-1}/τ)[x_j] and −Σ p log p."""
    out = []
    with torch.no_grad():
        for p, r in zip(prompts, responses, strict=True):
            x = torch.tensor([p + r])  # (1, n)
            z = model(input_ids=x).logits[0].float() / temperature  # (n, V)
            logp_v = torch.log_softmax(z, dim=-1)  # (n, V)
            lp = logp_v[:-1].gather(-1, x[0, 1:, None]).squeeze(-1)  # (n-1,), token j given x_<j
            ent = -(logp_v.exp() * logp_v).sum(-1)[:-1]  # (n-1,), distribution predicting token j
            out.append((lp, ent))
    return out


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_logprobs_and_entropy_match_unpadded_reference(model, temperature):
    vocab = model.config.vocab_size
    prompts = [[5, 6, 7, 8], [20], [30, 31]]
    responses = [[40, 41], [50, 51, 52, 53, 54, 55], [60]]
    assert max(max(s) for s in prompts + responses) < vocab
    ids, attn, resp, length = pack_sequences(prompts, responses, pad_id=0)
    logp, ent = token_logprobs_and_entropy(model, ids, attn, resp, temperature=temperature)
    assert logp.shape == ent.shape == (3, length)
    assert logp.dtype == ent.dtype == torch.float32
    assert logp.requires_grad and not ent.requires_grad
    assert torch.all(logp[:, 0] == 0)
    for i, (lp_ref, ent_ref) in enumerate(_reference(model, prompts, responses, temperature)):
        n = len(prompts[i]) + len(responses[i])
        torch.testing.assert_close(logp[i, 1:n].detach(), lp_ref, rtol=0, atol=1e-5)
        s = len(prompts[i])
        torch.testing.assert_close(ent[i, s:n], ent_ref[s - 1 :], rtol=0, atol=1e-5)
        assert torch.all(ent[i, :s] == 0) and torch.all(ent[i, n:] == 0)
        assert torch.all(logp[i, n:] == 0)
    assert torch.all(ent[resp.bool()] > 0)


def test_temperature_changes_logprobs(model):
    ids, attn, resp, _ = pack_sequences([[5, 6]], [[7, 8]], pad_id=0)
    a, _ = token_logprobs_and_entropy(model, ids, attn, resp, temperature=1.0)
    b, _ = token_logprobs_and_entropy(model, ids, attn, resp, temperature=0.5)
    assert not torch.allclose(a[0, 2:], b[0, 2:])


def test_gradients_flow_to_model_parameters(model):
    ids, attn, resp, _ = pack_sequences([[5, 6, 7], [8]], [[9, 10], [11, 12, 13]], pad_id=0)
    model.zero_grad(set_to_none=True)
    logp, ent = token_logprobs_and_entropy(model, ids, attn, resp)
    (logp * resp).sum().backward()
    grads = {n: p.grad for n, p in model.named_parameters()}
    assert all(g is not None for g in grads.values())
    assert grads["model.embed_tokens.weight"].abs().sum() > 0
    assert grads["model.layers.0.self_attn.q_proj.weight"].abs().sum() > 0
    model.zero_grad(set_to_none=True)


def test_argument_errors(model):
    ids, attn, resp, _ = pack_sequences([[5]], [[6]], pad_id=0)
    with pytest.raises(ValueError, match="temperature"):
        token_logprobs_and_entropy(model, ids, attn, resp, temperature=0.0)
    with pytest.raises(ValueError, match="attention_mask"):
        token_logprobs_and_entropy(model, ids, attn[:, :1], resp)
    with pytest.raises(ValueError, match="response_mask"):
        token_logprobs_and_entropy(model, ids, attn, resp[0])
    with pytest.raises(ValueError, match="input_ids"):
        token_logprobs_and_entropy(model, ids[0], attn[0], resp[0])
