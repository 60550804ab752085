"""A low-rank population in one generate call equals its members generated one by one."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from es_lightning.errors import ConfigError
from es_lightning.es.lowrank import LowRankNoise
from es_lightning.rollout.base import SamplingConfig
from es_lightning.rollout.hf_population import (
    generate_population,
    hooked_layers,
    population_hooks,
    sample_rows,
)

MEMBERS = [(11, 1.0), (11, -1.0), (23, 1.0)]
PROMPTS = [[5, 9, 14, 3], [7, 7, 21], [30, 4, 8, 12, 6]]


def test_sample_rows_inverts_the_truncated_distribution_by_hand():
    logits = torch.log(torch.tensor([[0.2, 0.5, 0.3]] * 4))  # sorted: token 1 (.5), 2 (.3), 0 (.2)
    u = torch.tensor([0.1, 0.55, 0.7, 0.99], dtype=torch.float64)
    # all tokens: cumulative .5, .8, 1.0
    assert sample_rows(logits, u, 1.0, 1.0).tolist() == [1, 2, 2, 0]
    # top_p .7: tokens 1 and 2 (mass before token 2 is .5 < .7), renormalised .625, 1.0
    assert sample_rows(logits, u, 1.0, 0.7).tolist() == [1, 1, 2, 2]
    # top_p .5: token 1 only
    assert sample_rows(logits, u, 1.0, 0.5).tolist() == [1, 1, 1, 1]


def test_batched_forward_equals_each_members_weights_written(hf_rollout):
    """Logits of a member-major batch under the hooks == each member's own forward with
    W + sign·σ·A Bᵀ/√r written into the model (tied embedding included)."""
    hf_rollout.es_init()
    hf_rollout.es_use_lowrank(2)
    sigma, rows_per_member = 0.05, 2
    ids = torch.randint(3, 60, (rows_per_member, 7), generator=torch.Generator().manual_seed(0))
    model = hf_rollout.served_model
    with torch.no_grad():
        centre = model(ids).logits
        with population_hooks(model, hf_rollout.es.master, hf_rollout.es.noise, MEMBERS, sigma):
            batched = model(ids.repeat(len(MEMBERS), 1)).logits  # (M·R, T, V)
        for m, (seed, sign) in enumerate(MEMBERS):
            hf_rollout.es.perturb(seed, sign, sigma)
            alone = model(ids).logits
            block = batched[m * rows_per_member : (m + 1) * rows_per_member]
            torch.testing.assert_close(block, alone, rtol=1e-4, atol=1e-4)
            assert (alone - centre).abs().max() > 1e-2, "the perturbation must move the logits"
        hf_rollout.es.restore()
    hooked = {name for _, name in hooked_layers(model, hf_rollout.es.master, LowRankNoise(2))}
    assert "model.embed_tokens.weight" in hooked and "lm_head.weight" not in hf_rollout.es.master


@pytest.mark.parametrize("temperature", [0.0, 0.8])
def test_population_in_one_call_equals_members_one_by_one(hf_rollout, temperature):
    hf_rollout.es_init()
    hf_rollout.es_use_lowrank(2)
    sampling = SamplingConfig(n=2, temperature=temperature, top_p=0.95, max_tokens=6, logprobs=True)
    seeds = [101, 101, 101]  # common random numbers
    batched = generate_population(hf_rollout, PROMPTS, sampling, MEMBERS, 0.05, seeds)
    alone = generate_population(hf_rollout, PROMPTS, sampling, MEMBERS, 0.05, seeds, batched=False)
    for member_b, member_a in zip(batched, alone, strict=True):
        for out_b, out_a in zip(member_b, member_a, strict=True):
            assert out_b.prompt_token_ids == out_a.prompt_token_ids
            assert [c.token_ids for c in out_b.completions] == [c.token_ids for c in out_a.completions]
            for c_b, c_a in zip(out_b.completions, out_a.completions, strict=True):
                torch.testing.assert_close(
                    torch.tensor(c_b.logprobs), torch.tensor(c_a.logprobs), rtol=0, atol=1e-4
                )
    tokens = [[c.token_ids for o in member for c in o.completions] for member in batched]
    assert tokens[0] != tokens[1] or tokens[0] != tokens[2], "members must generate different responses"


def test_common_sampling_seeds_share_streams_and_spaced_ones_do_not(hf_rollout):
    hf_rollout.es_init()
    hf_rollout.es_use_lowrank(1)
    sampling = SamplingConfig(n=3, temperature=1.0, max_tokens=8)
    same = generate_population(hf_rollout, PROMPTS, sampling, [(5, 1.0), (6, 1.0)], 0.0, [7, 7])
    assert [o.completions for o in same[0]] == [o.completions for o in same[1]]  # σ = 0: same weights
    other = generate_population(hf_rollout, PROMPTS, sampling, [(5, 1.0), (6, 1.0)], 0.0, [7, 7 + 2**32])
    assert [o.completions for o in other[0]] == [o.completions for o in same[0]]
    assert [o.completions for o in other[1]] != [o.completions for o in other[0]]


def test_a_moving_matrix_outside_linear_and_embedding_layers_is_refused():
    class Odd(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj = nn.Linear(3, 2)
            self.table = nn.Parameter(torch.zeros(4, 3))

    model = Odd()
    master = {n: p.detach() for n, p in model.named_parameters()}
    with pytest.raises(ConfigError, match="'table'"):
        hooked_layers(model, master, LowRankNoise(1))
    assert [n for _, n in hooked_layers(model.proj, {"weight": model.proj.weight}, LowRankNoise(1))] == [
        "weight"
    ]
    assert hooked_layers(model, master, LowRankNoise(1, frozenset({"table", "proj.weight"}))) == []
    assert LowRankNoise(1).rank == 1
