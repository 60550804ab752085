"""One task's evaluation in numbers: Pass@K, maj@K, greedy accuracy and task extras.

Given the ``M`` scored samples of each of ``P`` prompts (and optionally one greedy sample each),
:func:`summarize` returns::

    n_prompts, n_samples (= M), mean_reward
    pass@k = (1/P) Σ_p [1 - C(M - c_p, k) / C(M, k)]         c_p: correct samples of prompt p
    maj@k  = (1/P) Σ_p maj_at_k(answers_p, correct_p, k)       vote of k samples, mean over all
                                                               C(M, k) subsets (ties split evenly)
    greedy = (1/P) Σ_p 1[greedy sample of p is correct]
    <extra> = mean over samples of Score.extra[<extra>]        e.g. "f1"; greedy_<extra> likewise

A sample is correct when ``reward >= 1 - 1e-9`` (verifiers give binary rewards in [0, 1]; partial
credit below 1 does not count). The correct counts ``c_p`` are accumulated in one place, the
torchmetrics :class:`~es_lightning.evaluation.metric.PassAtK` (updated with the ``(P, M)`` boolean
matrix, then computed), so a sharded evaluation can sync the same state across ranks.
:func:`metric_names` turns a summary into logger keys (``eval/{task}/pass@{k}``) and
:func:`average_over_tasks` adds the cross-task mean.
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
    """Whether ``score`` counts as correct: ``reward >= 1 - 1e-9`` and finite (a NaN or an
    infinite reward is a verifier's failure, never a solve)."""
    return math.isfinite(score.reward) and score.reward >= CORRECT_THRESHOLD


def is_accuracy_key(key: str) -> bool:
    """Whether ``key`` names an accuracy: ``pass@k``, ``maj@k`` or ``greedy`` (what tables show and
    :func:`average_over_tasks` averages)."""
    return key.startswith(("pass@", "maj@")) or key == "greedy"


def _mean_extras(scores: Sequence[Score], prefix: str = "") -> dict[str, float]:
    """Mean of each ``extra`` key over the samples that report it."""
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for score in scores:
        for key, value in score.extra.items():
            sums[key] = sums.get(key, 0.0) + float(value)
            counts[key] = counts.get(key, 0) + 1
    return {f"{prefix}{key}": sums[key] / counts[key] for key in sums}


def summarize(
    scores: Sequence[Sequence[Score]],
    ks: Sequence[int] | None = None,
    greedy: Sequence[Score] | None = None,
    majority: bool = True,
) -> dict[str, float]:
    """Summarise one task's evaluation (see the module docstring for every formula).

    Args:
        scores: per prompt, the :class:`~es_lightning.tasks.base.Score` of each of its ``M``
            samples (the same ``M`` for every prompt).
        ks: the ``k`` of ``pass@k`` and ``maj@k``, each in ``[1, M]``; default ``1, ..., M``.
        greedy: one score per prompt from greedy decoding, aligned with ``scores``.
        majority: whether to report ``maj@k``; ``False`` for a task whose verifier extracts no
            answer to vote on (:attr:`~es_lightning.tasks.base.Task.extracts_answers`), where a
            vote would only ever read 0.

    Returns:
        ``{"n_prompts", "n_samples", "mean_reward", "pass@k"..., ["maj@k"...], ["greedy"], extras}``.

    Raises:
        ValueError: on no prompts, a prompt with no samples or a different ``M`` (the prompt index
            is named), ``greedy`` of the wrong length, or no ``k`` or a ``k`` out of range.
    """
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
    """``{"pass@k": value}`` from the ``(P, M)`` correct matrix, through :class:`PassAtK`.

    The metric's cross-rank sync is off: the summary covers the prompts passed in, and a rank that
    evaluates alone (rank 0 under Fabric) must not wait on ranks that never call it.
    """
    import torch  # torch and torchmetrics load on first use, not with the package

    from es_lightning.evaluation.metric import PassAtK

    metric = PassAtK(ks=ks, sync_on_compute=False)
    metric.update(torch.tensor(correct, dtype=torch.bool))
    return {key: float(value) for key, value in metric.compute().items()}


def metric_names(task: str, summary: Mapping[str, float], prefix: str = "eval") -> dict[str, float]:
    """Logger keys for one task's summary: ``{key: v}`` becomes ``{"{prefix}/{task}/{key}": v}``.

    e.g. ``eval/gsm8k/pass@8``, ``eval/gsm8k/maj@8``, ``eval/gsm8k/greedy``, ``eval/hotpotqa/f1``;
    a held-out suite evaluated during training logs under ``heldout/…``.
    """
    if not task or "/" in task:
        raise ValueError(f"metric_names: task name must be non-empty and contain no '/', got {task!r}")
    return {f"{prefix}/{task}/{key}": float(value) for key, value in summary.items()}


def _mean_over(tasks: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Unweighted mean of the accuracy keys present in every one of ``tasks``."""
    common = [key for key in tasks[0] if is_accuracy_key(key) and all(key in t for t in tasks[1:])]
    return {key: sum(float(t[key]) for t in tasks) / len(tasks) for key in common}


def average_over_tasks(
    summaries: Mapping[str, Mapping[str, float]],
    groups: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, dict[str, float]]:
    """The summaries plus their unweighted mean across tasks under the key ``"average"``.

    ``average[key] = (1/T) Σ_t summaries[t][key]`` for the ``pass@k``, ``maj@k`` and ``greedy``
    keys present in all ``T`` tasks (a ``k`` missing from any task is left out). Each named group
    adds the same mean over its tasks only, under its name, e.g. ``groups={"heldout_average":
    ["gpqa", "mbpp"]}`` (:func:`es_lightning.presets.average_groups` gives the paper's).

    Raises:
        ValueError: when ``summaries`` is empty, a task is itself named ``"average"``, or a group is
            empty, names a task that is not in ``summaries`` or takes a task's name or ``"average"``.
    """
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
