"""One rank's share of an ES population: perturb, generate, score and restore each of its members
(low-rank ones in one call); an accumulated update gets each R_i at once (``es.record_reward``).
With ``member_rollouts: fixed`` the centre's responses are re-scored under each member's weights
instead (:class:`FixedRollouts`, :mod:`es_lightning.es.rescoring`)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np
import torch

from es_lightning.es.rescoring import importance_weights, rescored_rewards
from es_lightning.es.update import Population
from es_lightning.evaluation.summary import is_correct
from es_lightning.strategies.base import Row, Sample
from es_lightning.strategies.metrics import response_stats, reward_names, text_samples, timed

if TYPE_CHECKING:
    from es_lightning.module import ReasoningModule
    from es_lightning.rollout.base import PopulationEngine, Rollout, RolloutOutput, SamplingConfig


@dataclass
class MemberResults:
    """What one rank measured of its members (zeros in the other ranks' entries)."""

    rewards: torch.Tensor  # (M,) R_i
    per_prompt: torch.Tensor  # (2, M, P): per member and prompt, mean reward and fraction correct
    tokens: int = 0
    responses: list[tuple[float, ...]] = field(
        default_factory=list
    )  # (reward, tokens, truncated, *per function)
    samples: list[Sample] = field(default_factory=list)
    timings: dict[str, float] = field(
        default_factory=lambda: dict.fromkeys(("generate", "perturb_restore", "score"), 0.0)
    )

    @classmethod
    def empty(cls, population_size: int, n_prompts: int) -> MemberResults:
        """Nothing measured yet: zero rewards for ``population_size`` members and ``n_prompts`` prompts."""
        return cls(
            rewards=torch.zeros(population_size, dtype=torch.float64),
            per_prompt=torch.zeros(2, population_size, n_prompts, dtype=torch.float64),
        )

    def record(self, i: int, module: ReasoningModule, rows: list[Row], outputs: list[RolloutOutput]) -> None:
        """Score member ``i``'s ``outputs``; the first member recorded gives the samples."""
        scores = module.score(rows, outputs)
        self.rewards[i] = float(np.mean([s.reward for per_prompt in scores for s in per_prompt]))
        self.per_prompt[0, i] = torch.tensor([np.mean([s.reward for s in per]) for per in scores])
        self.per_prompt[1, i] = torch.tensor([np.mean([is_correct(s) for s in per]) for per in scores])
        self.tokens += sum(len(c.token_ids) for o in outputs for c in o.completions)
        self.responses += response_stats(outputs, scores, reward_names(module))
        if not self.samples:
            self.samples = text_samples(module, rows, outputs, scores, member=i)


class FixedRollouts:
    """One update's responses sampled at the centre, re-scored under each member's weights."""

    def __init__(
        self,
        engine: Rollout,
        module: ReasoningModule,
        rows: list[Row],
        prompt_ids: list[list[int]],
        sampling: SamplingConfig,
    ) -> None:
        outputs = engine.generate(prompt_ids, sampling)
        scores = module.score(rows, outputs)
        self.n_prompts = len(rows)
        self.prompts = [p for p, out in zip(prompt_ids, outputs) for _ in out.completions]
        self.responses = [c.token_ids for out in outputs for c in out.completions]
        self.prompt_of = np.array([j for j, out in enumerate(outputs) for _ in out.completions])
        self.rewards = np.array([s.reward for per in scores for s in per])
        self.correct = np.array([float(is_correct(s)) for per in scores for s in per])
        self.tokens = sum(len(r) for r in self.responses)
        self.stats = response_stats(outputs, scores, reward_names(module))
        self.samples = text_samples(module, rows, outputs, scores)
        self.centre = self._loglik(engine)

    def _loglik(self, engine: Rollout) -> np.ndarray:
        return np.array([sum(lp) for lp in engine.score_logprobs(self.prompts, self.responses)])

    def rescore(self, engine: Rollout) -> tuple[float, torch.Tensor, torch.Tensor]:
        """(R_i, per-prompt weighted rewards, per-prompt weighted success) of the served member."""
        weights = importance_weights(self._loglik(engine), self.centre)
        reward, per_prompt = rescored_rewards(weights, self.rewards, self.prompt_of, self.n_prompts)
        _, success = rescored_rewards(weights, self.correct, self.prompt_of, self.n_prompts)
        return reward, torch.from_numpy(per_prompt), torch.from_numpy(np.clip(success, 0.0, 1.0))


def evaluate_members(
    rollout: Rollout,
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
    """Evaluate ``members`` on ``rows`` one after another (``record_rewards``: R_i to the centre)."""
    prompt_ids, es = module.encode(rows), rollout.es
    out = MemberResults.empty(population.size, len(rows))
    fixed = None
    if fixed_rollouts:  # sampled once at the centre, re-scored by every member
        with timed(out.timings, "generate"):
            fixed = FixedRollouts(
                rollout, module, rows, prompt_ids, replace(sampling, seed=sampling_seeds[0])
            )
        out.tokens += fixed.tokens
        if keeps_centre_samples:  # the centre's responses stand for the update's
            out.responses, out.samples = fixed.stats, fixed.samples
    for i in members:
        seed, sign = population.members[i]
        with timed(out.timings, "perturb_restore"):
            es.perturb(seed, sign, sigma)
        if fixed is None:
            with timed(out.timings, "generate"):
                outputs = rollout.generate(prompt_ids, replace(sampling, seed=sampling_seeds[i]))
            with timed(out.timings, "score"):
                out.record(i, module, rows, outputs)
        else:
            with timed(out.timings, "score"):
                out.rewards[i], out.per_prompt[0, i], out.per_prompt[1, i] = fixed.rescore(rollout)
        with timed(out.timings, "perturb_restore"):
            if record_rewards:
                es.record_reward(float(out.rewards[i]))
            es.restore()
    return out


def evaluate_population(
    engine: PopulationEngine,
    module: ReasoningModule,
    rows: list[Row],
    population: Population,
    members: range,
    sampling: SamplingConfig,
    sampling_seeds: list[int],
    sigma: float,
) -> MemberResults:
    """Evaluate the low-rank ``members`` on ``rows`` in one generation call."""
    out = MemberResults.empty(population.size, len(rows))
    chosen = [population.members[i] for i in members]
    with timed(out.timings, "generate"):
        outputs = engine.es_generate_population(
            module.encode(rows), sampling, chosen, sigma, [sampling_seeds[i] for i in members]
        )
    with timed(out.timings, "score"):
        for i, member_outputs in zip(members, outputs, strict=True):
            out.record(i, module, rows, member_outputs)
    return out
