"""Generation-mode evaluation: M samples per prompt at temperature T (+ greedy), scored by the task.

The paper's protocol is M = 32 samples at T = 0.6, reporting the unbiased Pass@K for K in 1..M
(see :mod:`es_lightning.evaluation.pass_at_k`), Maj@K and greedy accuracy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from es_lightning.errors import ConfigError
from es_lightning.evaluation.offline import write_completions_file
from es_lightning.evaluation.summary import summarize
from es_lightning.rollout.base import Rollout, SamplingConfig


@dataclass
class EvalConfig:
    """How a model is evaluated on a task."""

    num_samples: int = 32
    """M: samples per prompt (>= 1)."""
    temperature: float = 0.6
    """Sampling temperature of the M samples (>= 0)."""
    top_p: float = 1.0
    """Nucleus sampling mass of the M samples, in (0, 1]."""
    max_tokens: int = 1024
    """Most new tokens per sample (>= 1)."""
    ks: list[int] | None = None
    """K values reported for pass@K and maj@K, each in 1..M (``num_samples``); ``None``: every K in 1..M."""
    greedy: bool = True
    """Also decode greedily once per prompt and report its accuracy."""
    limit: int | None = None
    """Evaluate only the first ``limit`` prompts of the test split (>= 1)."""
    seed: int = 1234
    """Sampling seed (the same seed and weights give the same samples)."""
    stop: list[str] | None = field(default=None)
    """Strings that end a sample."""

    def __post_init__(self) -> None:
        """Refuse nonsensical settings, naming each (:class:`~es_lightning.errors.ConfigError`)."""
        if self.num_samples < 1:
            raise ConfigError(f"evaluation.num_samples must be >= 1, got {self.num_samples}")
        if self.ks is not None and not self.ks:
            raise ConfigError("evaluation.ks is an empty list; give K values or null (every K in 1..M)")
        bad = [k for k in self.ks or [] if not 1 <= k <= self.num_samples]
        if bad:
            raise ConfigError(
                f"evaluation.ks {bad} out of range 1..num_samples={self.num_samples} "
                "(Pass@K needs K <= M samples per prompt; raise num_samples or drop those K)"
            )
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"evaluation.limit must be >= 1, got {self.limit}")
        if not self.temperature >= 0:
            raise ConfigError(f"evaluation.temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"evaluation.top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens < 1:
            raise ConfigError(f"evaluation.max_tokens must be >= 1, got {self.max_tokens}")

    def sampling(self) -> SamplingConfig:
        return SamplingConfig(
            n=self.num_samples,
            temperature=self.temperature,
            top_p=self.top_p,
            max_tokens=self.max_tokens,
            seed=self.seed,
            stop=self.stop,
        )


@dataclass
class EvalResult:
    """One task's evaluation: the summary and what was generated."""

    summary: dict[str, float]
    rows: list[dict[str, Any]]
    completions: list[list[str]]
    greedy: list[str] | None
    rewards: list[list[float]] | None = None
    """The verifier's reward of each completion (saved beside it)."""
    greedy_rewards: list[float] | None = None

    def write_completions(self, path: str | Path) -> Path:
        return write_completions_file(
            path, self.rows, self.completions, self.greedy, self.rewards, self.greedy_rewards
        )


def evaluate_rows(
    module: Any, rollout: Rollout, rows: list[dict[str, Any]], config: EvalConfig
) -> EvalResult:
    """Sample, verify and summarise ``rows`` with ``module``'s prompt format and task."""
    if config.limit is not None:
        rows = rows[: config.limit]
    if not rows:
        raise ConfigError(f"evaluate: task {module.task.name!r} has no rows to evaluate")
    prompts = module.encode(rows)
    outputs = rollout.generate(prompts, config.sampling())
    scores = module.score(rows, outputs)
    completions = [[c.text for c in out.completions] for out in outputs]
    greedy_scores = greedy_texts = None
    if config.greedy:
        greedy_sampling = SamplingConfig(n=1, temperature=0.0, max_tokens=config.max_tokens, stop=config.stop)
        greedy_out = rollout.generate(prompts, greedy_sampling)
        greedy_scores = [s[0] for s in module.score(rows, greedy_out)]
        greedy_texts = [out.completions[0].text for out in greedy_out]
    summary = summarize(scores, ks=config.ks, greedy=greedy_scores)
    rewards = [[s.reward for s in per] for per in scores]
    greedy_rewards = None if greedy_scores is None else [s.reward for s in greedy_scores]
    return EvalResult(summary, rows, completions, greedy_texts, rewards, greedy_rewards)
