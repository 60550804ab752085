"""GRPO's rollouts of one update on one rank: G responses to each of the rank's prompts, scored,
with their advantages, packed for the trainer (:func:`sample_groups`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch

from es_lightning.es.noise import seed_schedule
from es_lightning.grpo import compute_advantages, pack_sequences
from es_lightning.grpo.advantages import AdvantageMode
from es_lightning.grpo.optimize import PolicyBatch
from es_lightning.rollout.seeds import spaced_seeds
from es_lightning.strategies.base import Row
from es_lightning.strategies.metrics import timed

if TYPE_CHECKING:
    from es_lightning.module import ReasoningModule
    from es_lightning.rollout.base import Rollout, RolloutOutput, SamplingConfig
    from es_lightning.tasks.base import Score


@dataclass
class GroupRollouts:
    """One rank's groups of an update: P prompts × G responses, their scores and advantages."""

    outputs: list[RolloutOutput]
    scores: list[list[Score]]
    rewards: torch.Tensor  # (P, G) r
    advantages: torch.Tensor  # (P*G,) A, prompt-major as the responses
    batch: PolicyBatch
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds of ``generate`` and ``score``."""


def sample_groups(
    module: ReasoningModule,
    rollout: Rollout,
    rows: list[Row],
    sampling: SamplingConfig,
    advantage: AdvantageMode,
) -> GroupRollouts:
    """G responses to each of ``rows``, scored, with advantages, packed into a :class:`PolicyBatch`."""
    timings: dict[str, float] = {}
    with timed(timings, "generate"):
        prompts = module.encode(rows)
        outputs = rollout.generate(prompts, sampling)
    with timed(timings, "score"):
        scores = module.score(rows, outputs)
        rewards = torch.tensor([[s.reward for s in per] for per in scores], dtype=torch.float32)  # (P, G)
    advantages = compute_advantages(rewards, mode=advantage).flatten()  # (P*G,)
    batch = policy_batch(prompts, outputs, advantages, module.tokenizer.pad_token_id)
    return GroupRollouts(outputs, scores, rewards, advantages, batch, timings)


def policy_batch(
    prompts: list[list[int]], outputs: list[RolloutOutput], advantages: torch.Tensor, pad_token_id: int
) -> PolicyBatch:
    """Every (prompt, response) pair of ``outputs`` packed for the trainer with its advantage."""
    pairs = [(p, c.token_ids) for p, out in zip(prompts, outputs) for c in out.completions]
    input_ids, attention, response_mask, _ = pack_sequences(
        [p for p, _ in pairs], [r for _, r in pairs], pad_token_id
    )
    return PolicyBatch(input_ids, attention, response_mask, advantages)


def rank_sampling_seed(run_seed: int, step: int, rank: int) -> int:
    """The sampling seed of rank ``rank`` at update ``step``, spaced so the ranks' streams differ."""
    base = seed_schedule(run_seed ^ 0x6A6A, step, 1)[0] % (2**31)
    return spaced_seeds(base, rank + 1)[rank]
