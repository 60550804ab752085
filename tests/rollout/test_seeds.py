"""Sampling streams never overlap across prompts, samples, ES members and GRPO ranks; shared
streams (common random numbers, the evaluation's chunks) stay shared."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoTokenizer

from es_lightning.rollout.base import SamplingConfig
from es_lightning.rollout.seeds import STREAM_STRIDE, chunk_seed, sample_seed, sample_seeds, spaced_seeds
from es_lightning.strategies.es import member_sampling_seeds
from es_lightning.strategies.grpo_rollouts import rank_sampling_seed

N, P, G = 32, 64, 8  # members, prompts, responses per prompt


def _flat(seeds: list[list[int | None]]) -> list[int | None]:
    return [s for per_prompt in seeds for s in per_prompt]


def test_seeds_of_one_call_are_distinct_and_the_old_shifted_pairs_differ():
    seeds = sample_seeds(1234, P, G)
    assert len(set(_flat(seeds))) == P * G
    # the old scheme gave (i, j) and (i + 1, j − 1) the same seed (seed + i + j)
    assert all(seeds[i][j] != seeds[i + 1][j - 1] for i in range(P - 1) for j in range(1, G))
    assert sample_seeds(None, 3, 2) == [[None, None]] * 3
    assert sample_seed(7, 2, 3) == 4472373038320037940  # pinned: seeds must replay in any process
    with pytest.raises(ValueError, match="n >= 1"):
        sample_seeds(0, 3, 0)


def test_a_call_over_later_prompts_seeded_seed_plus_k_replays_them():
    """The contract the evaluation's chunks and shards rely on: prompt i of a call seeded s is
    prompt i − k of a call seeded s + k."""
    whole = sample_seeds(99, 10, 3)
    assert sample_seeds(99 + 4, 6, 3) == whole[4:]
    assert [chunk_seed(99 + 4, j) for j in range(3)] == [chunk_seed(99, 4 + j) for j in range(3)]


def test_es_members_draw_disjoint_streams_unless_they_share_a_seed_on_purpose():
    for step in range(3):
        independent = member_sampling_seeds(5, step, N, "independent")
        every = [s for seed in independent for s in _flat(sample_seeds(seed, P, G))]
        assert len(set(every)) == N * P * G  # members × prompts × samples, all distinct
        common = member_sampling_seeds(5, step, N, "common")
        assert len(set(common)) == 1  # common random numbers: every member the same streams
        assert common[0] == independent[0]


def test_grpo_ranks_draw_disjoint_streams():
    ranks = 8
    seeds = [rank_sampling_seed(3, 10, r) for r in range(ranks)]
    every = [s for seed in seeds for s in _flat(sample_seeds(seed, P, G))]
    assert len(set(every)) == ranks * P * G
    # a single rank keeps the seed it always had
    from es_lightning.es.noise import seed_schedule

    assert seeds[0] == seed_schedule(3 ^ 0x6A6A, 10, 1)[0] % 2**31


def test_spaced_seeds_keep_prompt_keys_apart():
    seeds = spaced_seeds(17, 4)
    assert seeds == [17, 17 + STREAM_STRIDE, 17 + 2 * STREAM_STRIDE, 17 + 3 * STREAM_STRIDE]
    keys = {s + i for s in seeds for i in range(100_000)}  # the per-prompt keys seed + i
    assert len(keys) == 4 * 100_000


def test_transformers_chunk_seeds_differ_in_the_32_bits_torch_keeps():
    """torch's CPU generator keeps the low 32 bits of a seed: members spaced by 2³² must still
    get different generators, which the hash gives."""
    a = torch.Generator().manual_seed(5)
    b = torch.Generator().manual_seed(5 + STREAM_STRIDE)
    assert torch.equal(torch.randn(4, generator=a), torch.randn(4, generator=b))  # why we hash
    seeds = member_sampling_seeds(5, 0, N, "independent")
    low = {chunk_seed(s, start) & 0xFFFFFFFF for s in seeds for start in range(0, P, 8)}
    assert len(low) == N * (P // 8)


@pytest.mark.vllm
def test_vllm_requests_are_single_responses_with_their_own_seeds():
    from es_lightning.rollout.vllm import VLLMRollout

    sampling = SamplingConfig(n=3, temperature=0.7, max_tokens=5, seed=11)
    params = VLLMRollout.sampling_params(4, sampling)
    assert [p.n for p in params] == [1] * 12
    assert [p.seed for p in params] == _flat(sample_seeds(11, 4, 3))
    assert all(p.temperature == 0.7 and p.max_tokens == 5 for p in params)


@pytest.mark.vllm
def test_vllm_identical_prompts_get_different_samples(tiny_model_path, vllm_engine):
    """Three copies of one prompt, four samples each: under ``seed + i`` per prompt and vLLM's
    ``+ j`` per sample, sample j of copy i and sample j − 1 of copy i + 1 were the same text. Now
    all twelve differ; the same call again, and a call over the later copies seeded ``seed + 1``,
    give the same samples."""
    tok = AutoTokenizer.from_pretrained(tiny_model_path)
    prompts = [tok("Repeat: 12345\n").input_ids] * 3
    sampling = SamplingConfig(n=4, temperature=1.0, max_tokens=12, seed=5)
    out = [[c.token_ids for c in o.completions] for o in vllm_engine.generate(prompts, sampling)]
    flat = [ids for per in out for ids in per]
    assert len({tuple(ids) for ids in flat}) == 12
    assert out == [[c.token_ids for c in o.completions] for o in vllm_engine.generate(prompts, sampling)]
    later = vllm_engine.generate(prompts[1:], SamplingConfig(n=4, temperature=1.0, max_tokens=12, seed=6))
    assert [[c.token_ids for c in o.completions] for o in later] == out[1:]
