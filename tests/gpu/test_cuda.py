"""CUDA checks at real model size (random-initialised, nothing downloaded). Skipped without a GPU.

Run where a GPU is present: ``python -m pytest tests/gpu -q``.
"""

from __future__ import annotations

import time

import pytest
import torch

pytestmark = pytest.mark.cuda

QWEN_1P5B = dict(
    vocab_size=151936, hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
    num_attention_heads=12, num_key_value_heads=2, max_position_embeddings=4096, tie_word_embeddings=True,
)


def _real_size_model(dtype: torch.dtype):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    with torch.device("cuda"):
        model = Qwen2ForCausalLM(Qwen2Config(**QWEN_1P5B, dtype="float32"))
    return model.to(dtype).eval()


def _writer(model):
    params = dict(model.named_parameters())

    @torch.no_grad()
    def write(named):
        for name, tensor in named:
            params[name].copy_(tensor)

    return write


@torch.no_grad()
def test_bf16_exact_restore_and_es_update_at_1p5b():
    from es_lightning.es.noise import noise_like
    from es_lightning.es.weights import ESWeights

    model = _real_size_model(torch.bfloat16)
    n_params = sum(p.numel() for p in model.parameters())
    assert n_params > 1.4e9
    snapshot = {n: p.clone() for n, p in model.named_parameters()}
    master = {n: p.float() for n, p in model.named_parameters()}
    es = ESWeights(master, _writer(model), torch.bfloat16)
    ids = torch.randint(0, 1000, (2, 32), device="cuda")
    logits_before = model(ids).logits
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(20):
        es.perturb(seed=i, sign=1.0, sigma=1.5e-3)
        es.restore()
    torch.cuda.synchronize()
    per_cycle = (time.perf_counter() - t0) / 20
    assert all(torch.equal(p, snapshot[n]) for n, p in model.named_parameters())
    assert torch.equal(model(ids).logits, logits_before)
    print(f"\n[cuda] {n_params / 1e9:.2f}B params, perturb+restore {per_cycle * 1e3:.0f} ms/cycle")

    # naive in-place bf16 add/sub drifts (the public code's habit), ours does not
    name, p = next(iter(model.named_parameters()))
    eps = noise_like(0, name, p.shape, p.device)
    naive = p.clone()
    naive.add_((1.5e-3 * eps).to(torch.bfloat16)).sub_((1.5e-3 * eps).to(torch.bfloat16))
    assert not torch.equal(naive, p)

    coeffs = {s: float(z) for s, z in zip(range(100, 132), torch.linspace(-1.5, 1.5, 32))}
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    norm = es.update(coeffs, lr=2.5e-4, population_size=32)
    torch.cuda.synchronize()
    print(f"[cuda] ES update (N=32) {time.perf_counter() - t0:.2f} s, |Δ| = {norm:.4f}")
    # reference on one tensor in float64
    name = "model.layers.0.self_attn.q_proj.weight"
    ref = sum(c * noise_like(s, name, snapshot[name].shape, "cuda").double() for s, c in coeffs.items())
    start = snapshot[name].float().double()
    assert torch.allclose(es.master[name].double(), start + 2.5e-4 / 32 * ref, atol=1e-6)
    assert torch.equal(dict(model.named_parameters())[name], es.master[name].to(torch.bfloat16))
