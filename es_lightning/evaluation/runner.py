"""Generation-mode evaluation: M samples per prompt at temperature T (+ greedy), scored by the task.

Prompts are generated in chunks with one call's samples (prompt i seeded ``seed + i``), and on
several ranks each takes a contiguous share (:mod:`es_lightning.evaluation.sharding`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from es_lightning.errors import ConfigError
from es_lightning.evaluation.offline import write_completions_file
from es_lightning.evaluation.sharding import chunk_size, gather_on_rank_zero, shard_alignment, shard_range
from es_lightning.evaluation.summary import summarize
from es_lightning.ranks import fail_together
from es_lightning.rollout.base import Rollout, RolloutOutput, SamplingConfig
from es_lightning.rollout.generation_options import check_generation_options
from es_lightning.tasks.base import Score

EVAL_SPLITS = ("test", "validation")
"""The splits an evaluation may read (``evaluation.split``)."""


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
    """Evaluate only the first ``limit`` prompts of the evaluated split (>= 1)."""
    split: str = "test"
    """The split of each task that is evaluated: ``test`` (the numbers to report) or ``validation``
    (the one to select settings on, e.g. ``es-lightning tune``); recorded in the eval JSON."""
    seed: int = 1234
    """Sampling seed (the same seed and weights give the same samples)."""
    stop: list[str] | None = field(default=None)
    """Strings that end a sample."""
    top_k: int = 0
    """The M samples draw from the k most probable tokens only; 0: every token."""
    min_p: float = 0.0
    """The M samples drop tokens less probable than min_p times the most probable one, in [0, 1]; 0: off."""
    repetition_penalty: float = 1.0
    """CTRL repetition penalty of the M samples (> 0; 1: off); the greedy pass stays plain greedy."""
    generation_kwargs: dict[str, Any] | None = None
    """Further keyword arguments for the backend (transformers ``generate`` / ``vllm.SamplingParams``)
    when drawing the M samples, passed as they are."""

    def __post_init__(self) -> None:
        """Refuse nonsensical settings, naming each (:class:`~es_lightning.errors.ConfigError`)."""
        for name in ("num_samples", "max_tokens", "limit"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"evaluation.{name} must be >= 1, got {value}")
        if self.ks is not None and not self.ks:
            raise ConfigError("evaluation.ks is an empty list; give K values or null (every K in 1..M)")
        bad = [k for k in self.ks or [] if not 1 <= k <= self.num_samples]
        if bad:
            raise ConfigError(
                f"evaluation.ks {bad} out of range 1..num_samples={self.num_samples} "
                "(Pass@K needs K <= M samples per prompt; raise num_samples or drop those K)"
            )
        if self.split not in EVAL_SPLITS:
            raise ConfigError(f"evaluation.split must be one of {', '.join(EVAL_SPLITS)}, got {self.split!r}")
        if not self.temperature >= 0:
            raise ConfigError(f"evaluation.temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"evaluation.top_p must be in (0, 1], got {self.top_p}")
        check_generation_options(
            "evaluation", self.top_k, self.min_p, self.repetition_penalty, self.generation_kwargs
        )

    def sampling(self) -> SamplingConfig:
        """The M samples' :class:`SamplingConfig`: ``n = num_samples`` and the settings named alike."""
        alike = {f.name for f in fields(SamplingConfig)} & {f.name for f in fields(self)}
        return SamplingConfig(n=self.num_samples, **{name: getattr(self, name) for name in alike})


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
    module: Any,
    rollout: Rollout,
    rows: list[dict[str, Any]],
    config: EvalConfig,
    progress: bool = False,
    desc: str | None = None,
) -> EvalResult:
    """Sample, verify and summarise ``rows`` (the first ``config.limit``) with ``module``'s task."""
    result = evaluate_rows_sharded(module, rollout, rows, config, progress, desc)
    assert result is not None  # one rank: rank 0
    return result


def evaluate_rows_sharded(
    module: Any,
    rollout: Rollout,
    rows: list[dict[str, Any]],
    config: EvalConfig,
    progress: bool = False,
    desc: str | None = None,
    rank: int = 0,
    world_size: int = 1,
) -> EvalResult | None:
    """:func:`evaluate_rows` split across the ranks (call on every rank); rank 0 gets the result."""
    if config.limit is not None:
        rows = rows[: config.limit]
    if not rows:
        raise ConfigError(f"evaluate: task {module.task.name!r} has no rows to evaluate")
    prompts = module.encode(rows)
    sampling = config.sampling()
    greedy_sampling = SamplingConfig(n=1, temperature=0.0, max_tokens=config.max_tokens, stop=config.stop)
    passes = [sampling, greedy_sampling] if config.greedy else [sampling]
    shares = [
        shard_range(len(prompts), world_size, rank, shard_alignment(rollout, len(prompts), s.n))
        for s in passes
    ]
    bar = tqdm(
        total=sum((stop - start) * s.n for s, (start, stop) in zip(passes, shares)),
        desc=f"eval {desc or module.task.name}",
        unit="seq",
        disable=not progress,
        dynamic_ncols=True,
        leave=False,
    )
    with fail_together(), bar:  # generation and scoring: a failure on one rank ends all ranks
        outputs = [
            generate_in_chunks(
                rollout,
                prompts[start:stop],
                s,
                chunk=chunk_size(len(prompts), s.n, rollout),  # the single-rank evaluation's calls
                on_chunk=bar.update,
                first_index=start,
            )
            for s, (start, stop) in zip(passes, shares)
        ]
        mine = [_Scored.of(module, rows[start:stop], out) for (start, stop), out in zip(shares, outputs)]
    gathered = gather_on_rank_zero(mine, world_size)
    if gathered is None:
        return None
    # every rank's shares in rank order, i.e. prompt order; greedy: [] or [the greedy pass]
    sampled, *greedy = (_Scored.concat([share[i] for share in gathered]) for i in range(len(passes)))
    greedy_scores = [per[0] for per in greedy[0].scores] if greedy else None
    summary = summarize(
        sampled.scores, ks=config.ks, greedy=greedy_scores, majority=module.task.extracts_answers
    )
    lengths = [n for per in sampled.lengths for n in per]  # the M samples (greedy excluded)
    truncated = [t for per in sampled.truncated for t in per]
    summary["response_len"] = sum(lengths) / len(lengths)
    summary["truncated_frac"] = sum(truncated) / len(truncated)
    rewards = [[s.reward for s in per] for per in sampled.scores]
    greedy_texts = [per[0] for per in greedy[0].texts] if greedy else None
    greedy_rewards = None if greedy_scores is None else [s.reward for s in greedy_scores]
    return EvalResult(summary, rows, sampled.texts, greedy_texts, rewards, greedy_rewards)


@dataclass
class _Scored:
    """What one pass gave a run of prompts: what a rank sends rank 0."""

    texts: list[list[str]]
    scores: list[list[Score]]
    lengths: list[list[int]]
    truncated: list[list[bool]]

    @classmethod
    def of(cls, module: Any, rows: list[dict[str, Any]], outputs: list[RolloutOutput]) -> _Scored:
        scores = module.score(rows, outputs) if outputs else []
        return cls(
            texts=[[c.text for c in out.completions] for out in outputs],
            scores=scores,
            lengths=[[len(c.token_ids) for c in out.completions] for out in outputs],
            truncated=[[c.finish_reason == "length" for c in out.completions] for out in outputs],
        )

    @classmethod
    def concat(cls, parts: list[_Scored]) -> _Scored:
        """The parts of consecutive prompt ranges, in order, as one."""
        return cls(*([per for p in parts for per in getattr(p, f.name)] for f in fields(cls)))


def generate_in_chunks(
    rollout: Rollout,
    prompts: Sequence[Sequence[int]],
    sampling: SamplingConfig,
    chunk: int | None = None,
    on_chunk: Any = None,
    first_index: int = 0,
) -> list[RolloutOutput]:
    """``rollout.generate`` in chunks, each seeded with ``sampling.seed`` + its first index."""
    chunk = chunk or chunk_size(len(prompts), sampling.n, rollout)
    outputs: list[RolloutOutput] = []
    for start in range(0, len(prompts), chunk):
        seed = None if sampling.seed is None else sampling.seed + first_index + start
        part = prompts[start : start + chunk]
        outputs += rollout.generate(part, replace(sampling, seed=seed))
        if on_chunk is not None:
            on_chunk(len(part) * sampling.n)
    return outputs
