"""ES on fixed rollouts (``member_rollouts: fixed``): the centre's responses re-scored under each
member's weights (:mod:`es_lightning.es.rescoring`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

from es_lightning.es.rescoring import importance_weights, rescored_rewards
from es_lightning.evaluation.summary import is_correct
from es_lightning.strategies.base import Row
from es_lightning.strategies.metrics import response_stats, reward_names, text_samples

if TYPE_CHECKING:
    from es_lightning.module import ReasoningModule
    from es_lightning.rollout.base import Rollout, SamplingConfig


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
