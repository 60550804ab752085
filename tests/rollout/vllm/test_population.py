"""A low-rank population served as LoRA adapters in one vLLM call equals its members served one
by one with their weights written (W + sign·σ·A Bᵀ/√r), and equals the transformers rollout's."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from es_lightning.errors import ConfigError
from es_lightning.rollout.base import SamplingConfig
from es_lightning.rollout.vllm.population import lora_slot_rank
from es_lightning.strategies.es_lowrank import embedding_names

pytestmark = [pytest.mark.integration, pytest.mark.vllm]

MEMBERS = [(11, 1.0), (11, -1.0), (23, 1.0)]
PROMPTS = [[5, 9, 14, 3], [7, 7, 21], [30, 4, 8, 12, 6]]
SIGMA = 0.05


@pytest.fixture(scope="module")
def lora_engine(tiny_model_path):
    """A vLLM engine with room for the population (its own: LoRA slots are fixed at start)."""
    from es_lightning.rollout.vllm import VLLMRollout

    rollout = VLLMRollout(gpu_memory_utilization=0.1, cpu_kvcache_space_gib=1, max_model_len=256)
    rollout.setup(str(tiny_model_path), torch.device("cpu"), torch.float32)
    rollout.es_reserve_population(len(MEMBERS), 2)
    rollout.start()
    rollout.es_init()
    rollout.es_use_lowrank(2, embedding_names(str(tiny_model_path), rollout.loading))
    yield rollout
    rollout.close()


def _tokens(outputs):
    return [[c.token_ids for o in member for c in o.completions] for member in outputs]


@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_population_as_adapters_equals_members_with_weights_written(lora_engine, temperature):
    sampling = SamplingConfig(n=2, temperature=temperature, top_p=0.95, max_tokens=8, logprobs=True, seed=0)
    seeds = [101, 101, 101]  # common random numbers
    batched = lora_engine.es_generate_population(PROMPTS, sampling, MEMBERS, SIGMA, seeds)
    for (seed, sign), sampling_seed, member in zip(MEMBERS, seeds, batched, strict=True):
        lora_engine.es.perturb(seed, sign, SIGMA)
        alone = lora_engine.generate(PROMPTS, replace(sampling, seed=sampling_seed))
        lora_engine.es.restore()
        assert [o.prompt_token_ids for o in member] == PROMPTS
        assert [c.token_ids for o in member for c in o.completions] == [
            c.token_ids for o in alone for c in o.completions
        ]
        for out_b, out_a in zip(member, alone, strict=True):
            for c_b, c_a in zip(out_b.completions, out_a.completions, strict=True):
                torch.testing.assert_close(
                    torch.tensor(c_b.logprobs), torch.tensor(c_a.logprobs), rtol=0, atol=1e-4
                )
    tokens = _tokens(batched)
    assert tokens[0] != tokens[1] or tokens[0] != tokens[2], "members must generate different responses"


def test_population_adapters_equal_the_transformers_rollouts_hooks(lora_engine, hf_rollout, tiny_model_path):
    """Greedy tokens of the vLLM adapters == the transformers rollout's batched population, with
    the same fixed matrices (``lowrank_targets: linear``)."""
    hf_rollout.es_init()
    hf_rollout.es_use_lowrank(2, embedding_names(str(tiny_model_path), hf_rollout.loading))
    sampling = SamplingConfig(n=1, temperature=0.0, max_tokens=8)
    seeds = [5, 5, 5]
    vllm_out = lora_engine.es_generate_population(PROMPTS, sampling, MEMBERS, SIGMA, seeds)
    hf_out = hf_rollout.es_generate_population(PROMPTS, sampling, MEMBERS, SIGMA, seeds)
    assert _tokens(vllm_out) == _tokens(hf_out)


def test_a_population_after_an_update_serves_the_new_centre(lora_engine):
    """Adapters are rebuilt for every population and the base weights are the current centre."""
    sampling = SamplingConfig(n=1, temperature=0.0, max_tokens=8, logprobs=True)
    before = lora_engine.es_generate_population(PROMPTS, sampling, MEMBERS[:1], SIGMA, [0])
    lora_engine.es.update({11: 1.0, 23: -1.0}, 0.5, 2)
    after = lora_engine.es_generate_population(PROMPTS, sampling, MEMBERS[:1], SIGMA, [0])
    lora_engine.es.perturb(*MEMBERS[0], SIGMA)
    alone = lora_engine.generate(PROMPTS, sampling)
    lora_engine.es.restore()
    lora_engine.es_init()
    lora_engine.es_use_lowrank(2, embedding_names(lora_engine.model_path, lora_engine.loading))
    logps = [c.logprobs for o in after[0] for c in o.completions]
    assert logps != [c.logprobs for o in before[0] for c in o.completions]
    torch.testing.assert_close(
        torch.tensor([x for row in logps for x in row]),
        torch.tensor([x for o in alone for c in o.completions for x in c.logprobs]),
        rtol=0,
        atol=1e-4,
    )


def test_moving_the_embedding_is_refused_with_the_setting_to_change(lora_engine):
    with pytest.raises(ConfigError, match=r"model\.embed_tokens\.weight.*lowrank_targets: linear"):
        lora_engine.es_use_lowrank(2)
    lora_engine.es_use_lowrank(2, embedding_names(lora_engine.model_path, lora_engine.loading))


def test_lora_slot_rank_is_the_next_rank_vllm_offers():
    assert [lora_slot_rank(r) for r in (1, 2, 4, 8, 9, 300)] == [1, 8, 8, 8, 16, 320]
    with pytest.raises(ConfigError, match="rank 600"):
        lora_slot_rank(600)
