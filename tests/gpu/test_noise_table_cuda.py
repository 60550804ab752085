"""``noise: table`` on CUDA at Qwen2.5-1.5B's shape (random weights, nothing downloaded). Skipped
without a GPU; run where one is present: ``python -m pytest tests/gpu -q``."""

from __future__ import annotations

import time

import pytest
import torch

from tests.gpu.test_cuda import _real_size_model, _writer

pytestmark = [pytest.mark.cuda]

TABLE_SIZE = 2**28  # ≥ the tied embedding's 233M numbers; 1 GiB on the GPU


@torch.no_grad()
def test_bf16_exact_restore_and_update_from_a_cuda_table_at_1p5b():
    from es_lightning.es.noise import param_seed
    from es_lightning.es.weights import ESWeights

    model = _real_size_model(torch.bfloat16)
    snapshot = {n: p.clone() for n, p in model.named_parameters()}
    es = ESWeights({n: p.float() for n, p in model.named_parameters()}, _writer(model), torch.bfloat16)
    seconds = {}
    for source in ("generator", "table"):
        es.use_noise_table(TABLE_SIZE if source == "table" else None)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for i in range(10):
            es.perturb(seed=i, sign=1.0, sigma=1.5e-3)
            es.restore()
            es.serve_centre()
        torch.cuda.synchronize()
        seconds[source] = (time.perf_counter() - t0) / 10
        assert all(torch.equal(p, snapshot[n]) for n, p in model.named_parameters()), source
    table = es.table
    assert table is not None and table.numbers.device.type == "cuda"
    assert abs(float(table.numbers.mean())) < 1e-3 and abs(float(table.numbers.var()) - 1) < 1e-3

    coeffs = {s: float(z) for s, z in zip(range(100, 132), torch.linspace(-1.5, 1.5, 32))}
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    es.update(coeffs, lr=2.5e-4, population_size=32)
    torch.cuda.synchronize()
    update_s = time.perf_counter() - t0
    name = "model.layers.0.self_attn.q_proj.weight"  # float64 reference from the table's numbers
    twice, shape = torch.cat([table.numbers, table.numbers]), snapshot[name].shape
    ref = sum(
        c * twice[param_seed(s, name) % TABLE_SIZE :][: shape.numel()].double().reshape(shape)
        for s, c in coeffs.items()
    )
    assert torch.allclose(es.master[name].double(), snapshot[name].double() + 2.5e-4 / 32 * ref, atol=1e-6)
    print(
        f"\n[cuda] perturb+restore {seconds['generator'] * 1e3:.0f} ms (generator) vs "
        f"{seconds['table'] * 1e3:.0f} ms (table); N=32 update from the table {update_s:.2f} s"
    )
