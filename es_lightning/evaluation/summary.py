"""One task's evaluation in numbers: Pass@K, maj@K, greedy accuracy and task extras.

For ``M`` scored samples of each of ``P`` prompts, :func:`summarize` returns::

    n_prompts, n_samples (= M), mean_reward
    pass@k = (1/P) Σ_p [1 - C(M - c_p, k) / C(M, k)]         c_p: correct samples of prompt p
    maj@k  = (1/P) Σ_p maj_at_k(answers_p, correct_p, k)
    greedy = (1/P) Σ_p 1[greedy sample of p is correct]
    <extra> = mean over samples of Score.extra[<extra>]        e.g. "f1"; greedy_<extra> likewise

A sample is correct when ``reward >= 1 - 1e-9`` (partial credit does not count). The counts go
through :class:`~es_lightning.evaluation.metric.PassAtK`, so a sharded evaluation syncs one state.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from es_lightning.evaluation.majority import maj_at_k
from es_lightning.tasks.base import Score

CORRECT_THRESHOLD = 1.0 - 1e-9
"""Rewards at or above this count as correct."""

AVERAGE_KEY = "average"


def is_correct(score: Score) -> bool:
    """Whether ``score`` counts as correct: a finite ``reward >= 1 - 1e-9``."""
    return math.isfinite(score.reward) and score.reward >= CORRECT_THRESHOLD


def is_accuracy_key(key: str) -> bool:
    """Whether ``key`` is ``pass@k``, ``maj@k`` or ``greedy``."""
    return key.startswith(("pass@", "maj@")) or key == "greedy"


def _mean_extras(scores: Sequence[Score], prefix: str = "") -> dict[str, float]:
    """Mean of each ``extra`` key over the samples that report it."""
    values: dict[str, list[float]] = {}
    for score in scores:
        for key, value in score.extra.items():
            values.setdefault(key, []).append(float(value))
    return {f"{prefix}{key}": sum(found) / len(found) for key, found in values.items()}


def summarize(
    scores: Sequence[Sequence[Score]],
    ks: Sequence[int] | None = None,
    greedy: Sequence[Score] | None = None,
    majority: bool = True,
) -> dict[str, float]:
    """Summarise one task's evaluation (module docstring); ValueError naming a malformed input."""
    if not scores:
        raise ValueError("summarize: no prompts to summarise (scores is empty)")
    m = len(scores[0])
    if m == 0:
        raise ValueError("summarize: prompt 0 has no samples")
    for p, prompt_scores in enumerate(scores):
        if len(prompt_scores) != m:
            raise ValueError(
                f"summarize: prompt {p} has {len(prompt_scores)} samples but prompt 0 has {m}; "
                "every prompt needs the same number of samples M"
            )
    ks = list(range(1, m + 1)) if ks is None else [int(k) for k in ks]
    if not ks or not all(1 <= k <= m for k in ks):
        raise ValueError(f"summarize: every k must be in [1, M={m}] (samples per prompt), got ks={ks}")

    correct = [[is_correct(s) for s in prompt_scores] for prompt_scores in scores]  # (P, M)
    answers = [[s.answer for s in prompt_scores] for prompt_scores in scores]
    flat = [s for prompt_scores in scores for s in prompt_scores]

    out: dict[str, float] = {
        "n_prompts": float(len(scores)),
        "n_samples": float(m),
        "mean_reward": sum(s.reward for s in flat) / len(flat),
    }
    out.update(_pass_at_k(correct, ks))
    for k in ks if majority else ():
        votes = [maj_at_k(a, c, k) for a, c in zip(answers, correct, strict=True)]
        out[f"maj@{k}"] = sum(votes) / len(votes)

    if greedy is not None:
        if len(greedy) != len(scores):
            raise ValueError(f"summarize: {len(greedy)} greedy scores for {len(scores)} prompts")
        out["greedy"] = sum(is_correct(s) for s in greedy) / len(greedy)
        out.update(_mean_extras(greedy, prefix="greedy_"))

    for key, value in _mean_extras(flat).items():
        if key in out:
            raise ValueError(f"summarize: Score.extra key {key!r} clashes with a built-in metric name")
        out[key] = value
    return out


def _pass_at_k(correct: list[list[bool]], ks: list[int]) -> dict[str, float]:
    """``{"pass@k": value}`` through :class:`PassAtK`, its sync off (rank 0 may evaluate alone)."""
    import torch  # torch and torchmetrics load on first use, not with the package

    from es_lightning.evaluation.metric import PassAtK

    metric = PassAtK(ks=ks, sync_on_compute=False)
    metric.update(torch.tensor(correct, dtype=torch.bool))
    return {key: float(value) for key, value in metric.compute().items()}


def metric_names(task: str, summary: Mapping[str, float], prefix: str = "eval") -> dict[str, float]:
    """Logger keys of one task's summary: ``{"{prefix}/{task}/{key}": v}`` (``eval/gsm8k/pass@8``)."""
    if not task or "/" in task:
        raise ValueError(f"metric_names: task name must be non-empty and contain no '/', got {task!r}")
    return {f"{prefix}/{task}/{key}": float(value) for key, value in summary.items()}


def _mean_over(tasks: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Unweighted mean of the accuracy keys present in every one of ``tasks``."""
    common = [key for key in tasks[0] if is_accuracy_key(key) and all(key in t for t in tasks[1:])]
    return {key: sum(float(t[key]) for t in tasks) / len(tasks) for key in common}


def average_over_tasks(
    summaries: Mapping[str, Mapping[str, float]], groups: Mapping[str, Sequence[str]] | None = None
) -> dict[str, dict[str, float]]:
    """The summaries plus their mean over tasks under ``"average"``, and each of ``groups``."""
    if not summaries:
        raise ValueError("average_over_tasks: no task summaries given")
    if AVERAGE_KEY in summaries:
        raise ValueError(f"average_over_tasks: a task may not be named {AVERAGE_KEY!r}")
    out = {
        **{name: dict(s) for name, s in summaries.items()},
        AVERAGE_KEY: _mean_over(list(summaries.values())),
    }
    for group, members in (groups or {}).items():
        if group in out:
            raise ValueError(
                f"average_over_tasks: group {group!r} takes the name of a task or of the average"
            )
        missing = [m for m in members if m not in summaries]
        if not members or missing:
            raise ValueError(
                f"average_over_tasks: group {group!r} needs tasks among {list(summaries)}, got {list(members)}"
            )
        out[group] = _mean_over([summaries[m] for m in members])
    return out
