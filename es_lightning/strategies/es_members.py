"""One rank's share of an ES population: perturb, generate, score and restore each of its members.

Rank r evaluates members i ≡ r (mod world size). For each: serve θ + sign_i·σ·ε_i, generate the
mini-batch's responses (or re-score the centre's, ``member_rollouts: fixed``), R_i = the mean
reward, restore θ. When the update is accumulated, R_i goes back to the engine right away
(``es_record_reward``), so that the ε it holds for member i is folded into the running sums before
the next member's replaces it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from es_lightning.es.update import Population
from es_lightning.evaluation.summary import is_correct
from es_lightning.strategies.base import Row, Sample
from es_lightning.strategies.es_fixed import FixedRollouts
from es_lightning.strategies.metrics import response_stats, text_samples

if TYPE_CHECKING:
    from es_lightning.module import ReasoningModule
    from es_lightning.rollout.base import SamplingConfig


@dataclass
class MemberResults:
    """What one rank measured of its members (zeros in the other ranks' entries)."""

    rewards: torch.Tensor  # (M,) R_i
    per_prompt: torch.Tensor  # (2, M, P): per member and prompt, mean reward and fraction correct
    tokens: int = 0
    responses: list[tuple[float, int, bool]] = field(default_factory=list)  # (reward, tokens, truncated)
    samples: list[Sample] = field(default_factory=list)
    timings: dict[str, float] = field(
        default_factory=lambda: dict.fromkeys(("generate", "perturb_restore", "score"), 0.0)
    )


def evaluate_members(
    engine: Any,
    module: ReasoningModule,
    rows: list[Row],
    population: Population,
    members: range,
    sampling: SamplingConfig,
    sampling_seeds: list[int],
    sigma: float,
    fixed_rollouts: bool,
    record_rewards: bool,
    keeps_centre_samples: bool,
) -> MemberResults:
    """Evaluate ``members`` of ``population`` on ``rows`` (see the module docstring).

    ``fixed_rollouts``: the centre samples once (with member 0's sampling seed) and every member
    re-scores those responses; ``keeps_centre_samples``: this rank reports the centre's responses
    and samples then (rank 0). ``record_rewards``: hand each R_i to the engine (accumulating).
    """
    prompt_ids = module.encode(rows)
    out = MemberResults(
        rewards=torch.zeros(population.size, dtype=torch.float64),
        per_prompt=torch.zeros(2, population.size, len(rows), dtype=torch.float64),
    )
    timings = out.timings
    fixed = None
    if fixed_rollouts:  # sampled once at the centre, re-scored by every member
        t0 = time.perf_counter()
        fixed = FixedRollouts(engine, module, rows, prompt_ids, replace(sampling, seed=sampling_seeds[0]))
        timings["generate"] += time.perf_counter() - t0
        out.tokens += fixed.tokens
        if keeps_centre_samples:  # the centre's responses stand for the update's
            out.responses, out.samples = fixed.stats, fixed.samples
    for i in members:
        seed, sign = population.members[i]
        t0 = time.perf_counter()
        engine.es_perturb(seed, sign, sigma)
        t1 = time.perf_counter()
        if fixed is None:
            outputs = engine.generate(prompt_ids, replace(sampling, seed=sampling_seeds[i]))
            t2 = time.perf_counter()
            scores = module.score(rows, outputs)
            out.rewards[i] = float(np.mean([s.reward for per_prompt in scores for s in per_prompt]))
            out.per_prompt[0, i] = torch.tensor([np.mean([s.reward for s in per]) for per in scores])
            out.per_prompt[1, i] = torch.tensor([np.mean([is_correct(s) for s in per]) for per in scores])
            out.tokens += sum(len(c.token_ids) for o in outputs for c in o.completions)
            out.responses += response_stats(outputs, scores)
            if not out.samples:
                out.samples = text_samples(module, rows, outputs, scores, member=i)
        else:
            t2 = time.perf_counter()
            out.rewards[i], out.per_prompt[0, i], out.per_prompt[1, i] = fixed.rescore(engine)
        t3 = time.perf_counter()
        if record_rewards:
            engine.es_record_reward(float(out.rewards[i]))
        engine.es_restore()
        timings["perturb_restore"] += t1 - t0 + time.perf_counter() - t3
        timings["generate"] += t2 - t1
        timings["score"] += t3 - t2
    return out
