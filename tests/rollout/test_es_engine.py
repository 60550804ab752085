"""In-engine ES: perturb/restore is bit-exact, both backends agree, the state saves and resumes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoTokenizer

from es_lightning.rollout.base import SamplingConfig
from es_lightning.weight_files import master_files, write_weights

GREEDY = SamplingConfig(temperature=0.0, max_tokens=12)


@pytest.fixture()
def prompts(tiny_model_path):
    tok = AutoTokenizer.from_pretrained(tiny_model_path)
    return [tok(f"Repeat: {1000 + 37 * i}\n").input_ids for i in range(8)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_hf_1000_perturb_restore_cycles_bit_exact(tiny_model_path, dtype):
    from es_lightning.rollout.hf import HFRollout

    rollout = HFRollout()
    rollout.setup(str(tiny_model_path), torch.device("cpu"), dtype)
    rollout.es_init()
    centre = rollout.digest()
    for i in range(1000):
        rollout.es.perturb(seed=i, sign=1.0 if i % 2 else -1.0, sigma=1.5e-3)
        if i == 0:
            assert rollout.digest() != centre
        rollout.es.restore()
    assert rollout.digest() == centre


@pytest.mark.vllm
def test_vllm_perturb_restore_cycles_bit_exact(vllm_rollout, prompts):
    centre = vllm_rollout.digest()
    base = [o.completions[0].token_ids for o in vllm_rollout.generate(prompts, GREEDY)]
    for i in range(200):
        vllm_rollout.es.perturb(seed=10_000 + i, sign=1.0, sigma=1.5e-3)
        vllm_rollout.es.restore()
    assert vllm_rollout.digest() == centre
    assert [o.completions[0].token_ids for o in vllm_rollout.generate(prompts, GREEDY)] == base


@pytest.mark.vllm
def test_vllm_and_hf_agree_on_perturbations_and_updates(vllm_rollout, hf_rollout, prompts):
    hf_rollout.es_init()
    assert vllm_rollout.es.checksum() == hf_rollout.es.checksum()
    for seed, sign in [(1, 1.0), (2, -1.0)]:
        vllm_rollout.es.perturb(seed, sign, 0.05)
        hf_rollout.es.perturb(seed, sign, 0.05)
        v = [o.completions[0].token_ids for o in vllm_rollout.generate(prompts, GREEDY)]
        h = [o.completions[0].token_ids for o in hf_rollout.generate(prompts, GREEDY)]
        assert v == h
        assert vllm_rollout.checksum() == pytest.approx(hf_rollout.checksum(), rel=1e-12)
        vllm_rollout.es.restore()
        hf_rollout.es.restore()
    coeffs = {1: 0.7, 2: -1.3, 3: 0.25}
    nv = vllm_rollout.es.update(coeffs, lr=0.01, population_size=3)
    nh = hf_rollout.es.update(coeffs, lr=0.01, population_size=3)
    assert nv == pytest.approx(nh, rel=1e-12) and nv > 0
    assert vllm_rollout.es.checksum() == hf_rollout.es.checksum()
    assert vllm_rollout.checksum() == pytest.approx(hf_rollout.checksum(), rel=1e-12)


@pytest.mark.vllm
def test_vllm_and_hf_agree_on_accumulated_updates_and_exchanged_directions(vllm_rollout, hf_rollout):
    """The accumulated update inside the vLLM worker and the directions streamed out of it and
    back in are the HF rollout's, bit for bit."""
    hf_rollout.es_init()
    members, rewards = [(1, 1.0), (2, 1.0), (3, 1.0)], [0.25, 1.0, 0.5]
    for rollout in (vllm_rollout, hf_rollout):
        rollout.es.accumulate(True)
        for (seed, sign), reward in zip(members, rewards):
            rollout.es.perturb(seed, sign, 0.05)
            rollout.es.record_reward(reward)
            rollout.es.restore()
    mean, std = float(np.mean(rewards)), float(np.std(rewards))
    nv = vllm_rollout.es.update_accumulated(mean, std, 0.01, 3)
    nh = hf_rollout.es.update_accumulated(mean, std, 0.01, 3)
    assert nv == pytest.approx(nh, rel=1e-12) and nv > 0
    assert vllm_rollout.es.checksum() == hf_rollout.es.checksum()
    assert vllm_rollout.es.fold_seconds() > 0
    shapes = hf_rollout.es.shapes()
    assert vllm_rollout.es.shapes() == shapes
    names = list(shapes)
    coeffs = {4: 0.5, 5: -1.5}
    dv, dh = vllm_rollout.es.directions(names, coeffs=coeffs), hf_rollout.es.directions(names, coeffs=coeffs)
    assert all(torch.equal(dv[n], dh[n]) for n in names)
    half = len(names) // 2
    chunks = [{n: dh[n].clone() for n in names[:half]}, {n: dh[n].clone() for n in names[half:]}]
    nv = vllm_rollout.es.apply_directions(chunks, lr=0.01, population_size=2)
    nh = hf_rollout.es.update(coeffs, lr=0.01, population_size=2)
    assert nv == pytest.approx(nh, rel=1e-12)
    assert vllm_rollout.es.checksum() == hf_rollout.es.checksum()
    assert vllm_rollout.checksum() == pytest.approx(hf_rollout.checksum(), rel=1e-12)
    assert not list(Path("/dev/shm").glob("es-lightning-exchange-*"))  # the exchange files are gone


@pytest.mark.parametrize("backend", ["hf_rollout", pytest.param("vllm_rollout", marks=pytest.mark.vllm)])
def test_streamed_centre_written_then_read_restores_exact_centre(backend, request, tmp_path):
    from safetensors.torch import load_file

    rollout = request.getfixturevalue(backend)
    rollout.es_init(optimizer="adam")
    rollout.es.update({5: 1.0, 6: -0.5}, lr=0.02, population_size=2)
    updated_digest, updated_sum = rollout.digest(), rollout.es.checksum()
    streamed = dict(rollout.es.named_weights())
    assert all(t.dtype == torch.float32 and t.device.type == "cpu" for t in streamed.values())
    assert sum(t.double().sum().item() for t in streamed.values()) == updated_sum
    write_weights(tmp_path, streamed.items(), torch.bfloat16, tmp_path / "es_state")
    rollout.es.save_state(str(tmp_path / "es_state" / "optimizer.pt"))
    master = load_file(tmp_path / "es_state" / "master.safetensors")
    served = load_file(tmp_path / "model.safetensors")
    assert set(master) == set(served) == set(streamed)
    assert all(torch.equal(master[k], streamed[k]) and served[k].dtype == torch.bfloat16 for k in master)
    assert torch.load(tmp_path / "es_state" / "optimizer.pt", weights_only=True)["optimizer"]["state"]
    rollout.es_init()  # back to the base weights from the model files
    assert rollout.digest() != updated_digest
    rollout.es_init(master_files(tmp_path), "adam", str(tmp_path / "es_state" / "optimizer.pt"))
    assert rollout.digest() == updated_digest
    assert rollout.es.checksum() == updated_sum


@pytest.mark.vllm
def test_vllm_streams_the_centre_in_bounded_chunks(vllm_rollout, hf_rollout, monkeypatch):
    hf_rollout.es_init()
    expected = dict(hf_rollout.es.named_weights())
    largest = max(t.numel() * 4 for t in expected.values())
    monkeypatch.setattr(vllm_rollout, "stream_chunk_bytes", largest)  # one call per tensor or so
    chunks = vllm_rollout.rpc("es_weight_chunks", vllm_rollout.stream_chunk_bytes)[0]
    assert len(chunks) > 1 and sorted(n for c in chunks for n in c) == sorted(expected)
    streamed = dict(vllm_rollout.es.named_weights())
    assert set(streamed) == set(expected)
    assert all(torch.equal(streamed[k], expected[k]) for k in expected)


def test_es_operations_need_init(hf_rollout):
    with pytest.raises(RuntimeError, match="es_init"):
        hf_rollout.es.perturb(1, 1.0, 0.1)


def test_resume_from_missing_weights_names_the_file(hf_rollout, tmp_path):
    with pytest.raises(FileNotFoundError, match="master.safetensors"):
        hf_rollout.es_init([str(tmp_path / "es_state" / "master.safetensors")])


@pytest.mark.vllm
def test_vllm_members_prefill_long_prompts_under_their_own_weights(vllm_rollout, hf_rollout, tiny_model_path):
    """Prompts longer than a KV block (128 tokens on CPU) would be served from vLLM's prefix cache,
    computed under the weights that first saw them; every weight change drops that cache."""
    tok = AutoTokenizer.from_pretrained(tiny_model_path)
    long_prompts = [tok(f"Repeat: {'31415926' * 18}{i}\n").input_ids for i in range(4)]
    assert min(len(p) for p in long_prompts) > 140
    hf_rollout.es_init()
    vllm_rollout.generate(long_prompts, GREEDY)  # the centre's prompt KV is now cached
    for seed in (5, 6):
        vllm_rollout.es.perturb(seed, 1.0, 0.05)
        hf_rollout.es.perturb(seed, 1.0, 0.05)
        v = [o.completions[0].token_ids for o in vllm_rollout.generate(long_prompts, GREEDY)]
        h = [o.completions[0].token_ids for o in hf_rollout.generate(long_prompts, GREEDY)]
        assert v == h, f"member {seed} served stale prompt KV"
        vllm_rollout.es.restore()
        hf_rollout.es.restore()


@pytest.mark.parametrize("backend", ["hf_rollout", pytest.param("vllm_rollout", marks=pytest.mark.vllm)])
def test_restore_between_members_is_never_written_and_reads_serve_the_centre(backend, request, prompts):
    """es.restore defers its write: the next member's perturbation overwrites every served tensor,
    so a population writes N perturbations and one update; a generation (or a digest) after a
    restore first writes the centre back, bit-exactly. ``es.writes`` counts the writes of the
    served weights (in the vLLM workers for the vLLM rollout)."""
    rollout = request.getfixturevalue(backend)
    if backend == "hf_rollout":
        rollout.es_init()
    centre = rollout.digest()
    base = [o.completions[0].token_ids for o in rollout.generate(prompts, GREEDY)]
    before = rollout.es.writes
    members = [(seed, 0.05) for seed in (7, 8, 9)]
    for seed, sigma in members:
        rollout.es.perturb(seed, 1.0, sigma)
        rollout.es.restore()
    assert rollout.es.writes - before == 3
    again = [o.completions[0].token_ids for o in rollout.generate(prompts, GREEDY)]
    assert again == base  # the centre is served again, not member 9
    assert rollout.digest() == centre
    before = rollout.es.writes
    rollout.es.perturb(10, -1.0, 0.05)
    rollout.es.restore()
    rollout.es.update({10: 1.0, 11: -0.5}, lr=0.01, population_size=2)
    assert rollout.es.writes - before == 2
    assert rollout.digest() != centre


def test_hf_close_releases_the_es_centre(tiny_model_path):
    from es_lightning.rollout.hf import HFRollout

    rollout = HFRollout()
    rollout.setup(str(tiny_model_path), torch.device("cpu"), torch.float32)
    rollout.es_init()
    rollout.es.perturb(1, 1.0, 0.01)
    rollout.es.restore()
    rollout.close()
    assert rollout.model is None
    with pytest.raises(RuntimeError, match="es_init"):
        rollout.es.checksum()
