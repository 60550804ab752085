"""Weights into the vLLM engine (``VLLMRollout.load_weights``): bounded chunks, served bit-exactly
(fp32 and bf16), one CPU-kernel refresh and one prefix-cache drop per load, a pending ES restore
written first, no file left behind."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, AutoTokenizer

from es_lightning.rollout.base import SamplingConfig
from es_lightning.rollout.vllm.rollout import weight_chunks


def test_chunks_hold_at_most_max_bytes_in_order_and_a_large_tensor_alone():
    named = [
        ("a", torch.zeros(10)),
        ("b", torch.zeros(10)),
        ("big", torch.zeros(100)),
        ("c", torch.zeros(2, 3).t()),  # not contiguous: sent as a contiguous copy
    ]
    chunks = list(weight_chunks(named, max_bytes=80))  # 40 + 40 bytes fit; 400 travel alone
    assert [list(c) for c in chunks] == [["a", "b"], ["big"], ["c"]]
    assert all(t.is_contiguous() and t.device.type == "cpu" for c in chunks for t in c.values())
    assert chunks[0]["a"].data_ptr() == named[0][1].data_ptr()  # CPU tensors are not copied
    assert list(weight_chunks([], max_bytes=80)) == []
    with pytest.raises(ValueError, match="max_bytes"):
        next(weight_chunks(named, max_bytes=0))


def _perturbed(tiny_model_path, seed: int) -> dict[str, torch.Tensor]:
    model = AutoModelForCausalLM.from_pretrained(tiny_model_path, dtype=torch.float32)
    gen = torch.Generator().manual_seed(seed)
    return {n: p.detach() + torch.randn(p.shape, generator=gen) * 0.05 for n, p in model.named_parameters()}


def _served_digest_of(rollout, weights: dict[str, torch.Tensor], tmp_path) -> str:
    """The digest of the engine serving ``weights`` by another route: the ES start from a
    safetensors file (fp32 master, served as its cast: exact in an fp32 engine)."""
    path = tmp_path / "reference.safetensors"
    save_file({n: t.contiguous() for n, t in weights.items()}, str(path))
    rollout.es_init([str(path)])
    return rollout.digest()


def _record_calls(rollout, monkeypatch) -> list[str]:
    calls: list[str] = []
    rpc, changed = rollout.rpc, rollout._weights_changed
    monkeypatch.setattr(rollout, "rpc", lambda method, *a: (calls.append(method), rpc(method, *a))[1])
    monkeypatch.setattr(rollout, "_weights_changed", lambda: (calls.append("weights_changed"), changed())[1])
    return calls


@pytest.mark.vllm
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_engine_serves_exactly_what_was_sent_in_several_chunks(
    vllm_rollout, tiny_model_path, tmp_path, monkeypatch, dtype
):
    base = vllm_rollout.digest()
    weights = {n: t.to(dtype) for n, t in _perturbed(tiny_model_path, seed=3).items()}  # bf16: its bits
    largest = max(t.numel() * t.element_size() for t in weights.values())
    monkeypatch.setattr(vllm_rollout, "stream_chunk_bytes", largest)  # about one call per tensor
    calls = _record_calls(vllm_rollout, monkeypatch)
    vllm_rollout.load_weights(weights.items())
    chunks = calls.count("load_weights_from_file")
    assert chunks > 1
    assert calls == ["load_weights_from_file"] * chunks + ["refresh_cpu_kernels", "weights_changed"]
    assert not any(Path(vllm_rollout._tmp.name).iterdir())  # each chunk's file is gone
    served = vllm_rollout.digest()
    assert served != base
    assert vllm_rollout.checksum() == pytest.approx(
        sum(t.double().sum().item() for t in weights.values()), rel=1e-9
    )
    # the CPU kernels were repacked after the last chunk: the engine answers like the HF model
    model = AutoModelForCausalLM.from_pretrained(tiny_model_path, dtype=torch.float32)
    model.load_state_dict({n: t.float() for n, t in weights.items()}, strict=False)
    prompt = AutoTokenizer.from_pretrained(tiny_model_path)("Repeat: 1234\n").input_ids
    engine = vllm_rollout.generate([prompt], SamplingConfig(temperature=0.0, max_tokens=12))[0]
    expected = model.generate(
        torch.tensor([prompt]), max_new_tokens=12, do_sample=False, eos_token_id=2, pad_token_id=0
    )
    assert (
        engine.completions[0].token_ids
        == expected[0, len(prompt) :].tolist()[: len(engine.completions[0].token_ids)]
    )
    monkeypatch.undo()
    assert _served_digest_of(vllm_rollout, weights, tmp_path) == served


@pytest.mark.vllm
def test_a_partial_load_lands_on_the_centre_after_a_pending_restore(vllm_rollout, tiny_model_path, tmp_path):
    base_weights = {
        n: p.detach().clone()
        for n, p in AutoModelForCausalLM.from_pretrained(
            tiny_model_path, dtype=torch.float32
        ).named_parameters()
    }
    name = next(n for n in base_weights if n.endswith("q_proj.weight"))
    replacement = _perturbed(tiny_model_path, seed=5)[name]
    vllm_rollout.es.perturb(seed=1, sign=1.0, sigma=0.1)
    vllm_rollout.es.restore()  # deferred: the load must write the centre back first
    vllm_rollout.load_weights([(name, replacement)])
    served = vllm_rollout.digest()
    assert _served_digest_of(vllm_rollout, base_weights | {name: replacement}, tmp_path) == served


@pytest.mark.vllm
def test_loading_nothing_writes_nothing(vllm_rollout, monkeypatch):
    calls = _record_calls(vllm_rollout, monkeypatch)
    vllm_rollout.load_weights([])
    assert calls == []
