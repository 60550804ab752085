"""In-engine ES with ``noise: table``: perturb/restore stays bit-exact, the vLLM workers' table is
the trainer process's, and a resumed centre continues bit for bit (``test_es_engine.py`` has the
same checks for ``noise: generator``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers import AutoTokenizer

from es_lightning.rollout.base import SamplingConfig
from es_lightning.weight_files import master_files, write_weights

GREEDY = SamplingConfig(temperature=0.0, max_tokens=12)
SIZE = 2**16  # twice the tiny model's largest tensor: many slices wrap past the table's end
MEMBERS = [(1, 1.0), (2, 1.0), (3, 1.0), (4, 1.0)]
REWARDS = [[0.25, 1.0, 0.5, 0.0], [1.0, 0.0, 0.75, 0.5], [0.5, 0.25, 1.0, 0.0], [0.0, 0.5, 0.25, 1.0]]


@pytest.fixture()
def prompts(tiny_model_path):
    tok = AutoTokenizer.from_pretrained(tiny_model_path)
    return [tok(f"Repeat: {1000 + 37 * i}\n").input_ids for i in range(8)]


def _updates(rollout, first: int, last: int) -> None:
    """Accumulated updates ``first``..``last - 1`` of the members (seeds shifted per update)."""
    for step in range(first, last):
        rollout.es.accumulate(True)
        for (seed, sign), reward in zip(MEMBERS, REWARDS[step]):
            rollout.es.perturb(100 * step + seed, sign, 0.05)
            rollout.es.record_reward(reward)
            rollout.es.restore()
        rewards = np.array(REWARDS[step])
        rollout.es.update_accumulated(float(rewards.mean()), float(rewards.std()), 0.01, len(MEMBERS))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_hf_1000_perturb_restore_cycles_bit_exact_with_the_table(tiny_model_path, dtype):
    from es_lightning.rollout.hf import HFRollout

    rollout = HFRollout()
    rollout.setup(str(tiny_model_path), torch.device("cpu"), dtype)
    rollout.es_init()
    rollout.es.use_noise_table(SIZE)
    centre = rollout.digest()
    for i in range(1000):
        rollout.es.perturb(seed=i, sign=1.0 if i % 2 else -1.0, sigma=1.5e-3)
        if i == 0:
            assert rollout.digest() != centre
        rollout.es.restore()
    assert rollout.digest() == centre


@pytest.mark.vllm
def test_vllm_perturb_restore_cycles_bit_exact_with_the_table(vllm_rollout, prompts):
    vllm_rollout.es.use_noise_table(SIZE)
    centre = vllm_rollout.digest()
    base = [o.completions[0].token_ids for o in vllm_rollout.generate(prompts, GREEDY)]
    for i in range(200):
        vllm_rollout.es.perturb(seed=10_000 + i, sign=1.0, sigma=1.5e-3)
        vllm_rollout.es.restore()
    assert vllm_rollout.digest() == centre
    assert [o.completions[0].token_ids for o in vllm_rollout.generate(prompts, GREEDY)] == base


@pytest.mark.vllm
def test_vllm_workers_and_this_process_read_the_same_table(vllm_rollout, hf_rollout, prompts):
    """Members, redrawn and accumulated updates and the directions two ranks would exchange
    (each its own half of the tensors) agree bit for bit between the vLLM worker's table and this
    process's, and differ from the generator's."""
    hf_rollout.es_init()
    hf_rollout.es.perturb(1, 1.0, 0.05)
    generator_digest = hf_rollout.digest()  # member 1 with ε from the generator
    hf_rollout.es.restore()
    for rollout in (vllm_rollout, hf_rollout):
        rollout.es.use_noise_table(SIZE)
    for seed, sign in [(1, 1.0), (2, -1.0)]:
        vllm_rollout.es.perturb(seed, sign, 0.05)
        hf_rollout.es.perturb(seed, sign, 0.05)
        assert vllm_rollout.checksum() == pytest.approx(hf_rollout.checksum(), rel=1e-12)
        if seed == 1:
            assert hf_rollout.digest() != generator_digest
        v = [o.completions[0].token_ids for o in vllm_rollout.generate(prompts, GREEDY)]
        assert v == [o.completions[0].token_ids for o in hf_rollout.generate(prompts, GREEDY)]
        vllm_rollout.es.restore()
        hf_rollout.es.restore()
    coeffs = {1: 0.7, 2: -1.3, 3: 0.25}
    nv = vllm_rollout.es.update(coeffs, lr=0.01, population_size=3)
    assert nv == pytest.approx(hf_rollout.es.update(coeffs, lr=0.01, population_size=3), rel=1e-12)
    assert vllm_rollout.es.checksum() == hf_rollout.es.checksum()
    _updates(vllm_rollout, 0, 1)
    _updates(hf_rollout, 0, 1)
    assert vllm_rollout.es.checksum() == hf_rollout.es.checksum()
    names = list(hf_rollout.es.shapes())
    half = len(names) // 2
    coeffs = {4: 0.5, 5: -1.5}
    chunks = [
        vllm_rollout.es.directions(names[:half], coeffs=coeffs),
        hf_rollout.es.directions(names[half:], coeffs=coeffs),
    ]
    nv = vllm_rollout.es.apply_directions(chunks, lr=0.01, population_size=2)
    assert nv == pytest.approx(hf_rollout.es.update(coeffs, lr=0.01, population_size=2), rel=1e-12)
    assert vllm_rollout.es.checksum() == hf_rollout.es.checksum()
    assert vllm_rollout.checksum() == pytest.approx(hf_rollout.checksum(), rel=1e-12)


@pytest.mark.parametrize("backend", ["hf_rollout", pytest.param("vllm_rollout", marks=pytest.mark.vllm)])
def test_straight_and_half_then_resumed_centres_are_bit_identical(backend, request, tmp_path):
    """Four accumulated updates in one go, against two, the centre streamed out and read back
    (as a checkpoint and a resume do), the table used again, and two more."""
    rollout = request.getfixturevalue(backend)
    rollout.es_init()
    rollout.es.use_noise_table(SIZE)
    _updates(rollout, 0, 4)
    straight = dict(rollout.es.named_weights())
    rollout.es_init()
    rollout.es.use_noise_table(SIZE)
    _updates(rollout, 0, 2)
    write_weights(tmp_path, rollout.es.named_weights(), torch.float32, tmp_path / "es_state")
    rollout.es_init(master_files(tmp_path))
    rollout.es.use_noise_table(SIZE)
    _updates(rollout, 2, 4)
    resumed = dict(rollout.es.named_weights())
    assert set(resumed) == set(straight)
    assert all(torch.equal(resumed[n], straight[n]) for n in straight)
    rollout.es_init()
    assert any(not torch.equal(t, straight[n]) for n, t in rollout.es.named_weights())
