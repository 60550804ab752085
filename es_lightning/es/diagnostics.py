"""Is there an ES signal? Per-update diagnostics of the member rewards, and the no-signal verdict.

The ES step (1/N)·Σ_i z_i ε_i only points uphill when the ranking of the members by their rewards
R_i reflects their weights θ + σε_i rather than the luck of the sampled responses. Each update
has r[i, p], member i's mean reward on prompt p (shape (N, P),
:attr:`~es_lightning.strategies.base.PopulationResult.member_prompt_rewards`), and R_i = mean_p r[i, p].

Split-half reliability (``es/reward_reliability``, :func:`split_half_reliability`). The prompts
at even positions p = 0, 2, 4, … form half a, those at odd positions half b (a fixed split; the
batch's order is already random)::

    R_i^a = mean_{p even} r[i, p]      R_i^b = mean_{p odd} r[i, p]
    r_ab  = Pearson corr over members i of (R^a, R^b)          (es/reward_split_half_corr)
    ρ     = 2·r_ab / (1 + r_ab)        (Spearman–Brown: the reliability of the whole batch's R_i)

ρ ≈ 1: both halves rank the members alike, so R_i measures something about member i; ρ ≈ 0: the
ranking is noise and the update a random walk. Conventions: ρ is clipped to [−1, 1] (it runs to
−∞ as r_ab → −1, e.g. when all R_i tie and the halves mirror each other); NaN when either half
has the same value for every member (that half cannot rank them, so the update measures nothing:
counting it as 0 would pull a window's mean towards "no signal" on runs whose members rarely
differ, such as the arithmetic demo, where ES learns) and when there are fewer than 2 members or 2
prompts (no split exists).

Over many updates (:func:`pooled_reliability`) the reliability is the Spearman–Brown value of the
*mean* split-half correlation, ρ̄ = 2·mean(r_ab) / (1 + mean(r_ab)), NaN updates skipped. The mean
of the per-update ρ is not used: 2r/(1 + r) is concave and clipped, so with no signal at all
(E[r_ab] = 0) the per-update ρ average below 0, and with signal they understate it
(docs/instruments.md has both on measured runs). Logs that kept only ρ give r_ab back as ρ/(2 − ρ) (:func:`correlation_from_reliability`;
a clipped ρ = −1 only says r_ab ≤ −1/3).

Antithetic pairs (``estimator: antithetic``). The members are pairs θ ± σε_j (member 2j is +, 2j+1
is −, :class:`~es_lightning.es.update.Population`), and the update weighs ε_j by z_{2j} − z_{2j+1}:
its signal is in the pair's difference d_j = R(θ + σε_j) − R(θ − σε_j), not in R_i. So the same
split-half reliability is measured on the per-prompt differences (:func:`pair_differences`)::

    d[j, p] = r[2j, p] − r[2j+1, p]                                   shape (N/2, P), or (N, P)
    r_ab^d  = Pearson corr over pairs j of (mean_{p even} d[j, p], mean_{p odd} d[j, p])
    ρ_d     = 2·r_ab^d / (1 + r_ab^d)

(``es/antithetic_diff_split_half_corr``, ``es/antithetic_diff_reliability``; same conventions as ρ).
With common sampling seeds the two members of a pair share their evaluation noise, which the
difference cancels, so ρ_d can be high where ρ is low; the run-level signal of an antithetic run
reads ρ_d and the number of pairs (:mod:`es_lightning.es.run_signal`).

Flip rate (``es/flip_rate``, :func:`flip_rate`): the share of (member, prompt) rewards that differ
from the prompt's modal reward across the members::

    flip = (1 / (N·P)) · Σ_p (N − max_v #{i : r[i, p] = v})

(ties between modes do not matter: they have the same count). 0: every member scores every
prompt alike, so the perturbations change nothing the verifier sees. It counts changes from the
weights and, with independent member sampling seeds, from sampling as well; with fixed
(re-scored) rollouts r[i, p] is continuous and nearly every value differs, so read it with
``member_rollouts: regenerate``.

No signal (:func:`no_signal_reason`): more than half of the last ``window`` updates were skipped
(all R_i tied), or the run's updates so far cannot add up to learning: the upper end of the 95 %
interval of the run-level signal √(ρ̄·N·T) (:mod:`es_lightning.es.run_signal`: ρ̄ over the applied
updates, N members or antithetic pairs, T applied updates) is below a threshold (2 by default: a
summed gain within two standard deviations of the random walk's). A run that is only noisy per
update but adds up is not flagged: ρ̄ = 0.025 over 120 updates of 32 members is a signal of 9.8.
The run-level rule is judged every ``window`` updates and fires when the bound stayed below the
threshold at two looks in a row (each look is one more chance of a false alarm; two in a row
keep the chance for a run with a weak real signal below 5 %, ``tests/es/test_diagnostics.py``).
One update's r_ab is noisy (its standard error is about 1/√N), so the run-level bound stays above
2 unless ρ̄'s upper bound is near 0 (:mod:`es_lightning.es.run_signal` shows why): the warning
says "no signal" only where the logged rewards exclude the signal a run needs. Skipped updates
are left out of ρ̄ (they moved nothing; their halves mirror, r_ab = −1).
:class:`SignalMonitor` turns that into one warning per run (:func:`no_signal_message` names the
likely causes and knobs; :func:`constant_reward_message`, when every response got the same reward
in most of the last window: then the reward function, not σ, is the cause).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from es_lightning.es.run_signal import measure_run_signal, spearman_brown

SIGNAL_LEVEL = 0.95
"""The two-sided level of the run-level signal's interval that the no-signal warning reads."""

__all__ = [
    "SignalMonitor",
    "antithetic_split_half_correlation",
    "constant_reward_message",
    "correlation_from_reliability",
    "flip_rate",
    "no_signal_message",
    "no_signal_reason",
    "pair_differences",
    "pooled_reliability",
    "spearman_brown",
    "split_half_correlation",
    "split_half_reliability",
]


def _member_prompt(member_prompt_rewards: np.ndarray) -> np.ndarray:
    r = np.asarray(member_prompt_rewards, dtype=np.float64)
    if r.ndim != 2:
        raise ValueError(f"member_prompt_rewards must have shape (N, P), got {r.shape}")
    return r


def split_half_correlation(member_prompt_rewards: np.ndarray) -> float:
    """r_ab, the correlation over members of their mean rewards on the even-position and the
    odd-position prompts (module docstring); NaN when a half does not vary over the members or with
    fewer than 2 members or prompts."""
    r = _member_prompt(member_prompt_rewards)
    n_members, n_prompts = r.shape
    if n_members < 2 or n_prompts < 2:
        return float("nan")
    half_a, half_b = r[:, 0::2].mean(axis=1), r[:, 1::2].mean(axis=1)  # (N,), (N,)
    if np.all(half_a == half_a[0]) or np.all(half_b == half_b[0]):
        return float("nan")
    return float(np.clip(np.corrcoef(half_a, half_b)[0, 1], -1.0, 1.0))


def split_half_reliability(member_prompt_rewards: np.ndarray) -> float:
    """ρ, the Spearman–Brown split-half reliability of one update's member rewards (module
    docstring): in [−1, 1], NaN when a half does not vary over the members or with fewer than 2
    members or prompts."""
    return spearman_brown(split_half_correlation(member_prompt_rewards))


def pooled_reliability(correlations: Sequence[float]) -> float:
    """ρ̄ over updates: the Spearman–Brown value of the mean of their finite split-half
    correlations r_ab (module docstring); NaN when none is finite."""
    values = np.asarray(correlations, dtype=np.float64)
    finite = values[np.isfinite(values)]
    return spearman_brown(float(finite.mean())) if finite.size else float("nan")


def correlation_from_reliability(reliability: float) -> float:
    """r_ab from a logged ρ: ρ / (2 − ρ) (the inverse of Spearman–Brown); ρ = −1 (clipped) gives
    −1/3, the largest r_ab it can stand for; NaN stays NaN."""
    if not np.isfinite(reliability):
        return float("nan")
    return float(reliability / (2.0 - reliability))


def pair_differences(member_prompt_rewards: np.ndarray) -> np.ndarray:
    """d[j, p] = r[2j, p] − r[2j+1, p] of an antithetic population's (N, P) table (members listed
    as (+ε_j, −ε_j) pairs), shape (N/2, P)."""
    r = _member_prompt(member_prompt_rewards)
    if r.shape[0] % 2:
        raise ValueError(f"antithetic members come in (+, −) pairs; got {r.shape[0]} members")
    return r[0::2] - r[1::2]


def antithetic_split_half_correlation(member_prompt_rewards: np.ndarray) -> float:
    """r_ab^d, the split-half correlation of the antithetic pairs' differences d_j (module
    docstring); NaN with fewer than 2 pairs or 2 prompts, or when a half of d does not vary."""
    return split_half_correlation(pair_differences(member_prompt_rewards))


def flip_rate(member_prompt_rewards: np.ndarray) -> float:
    """The share of (member, prompt) rewards that differ from the prompt's modal reward over the
    members (module docstring); NaN for an empty array."""
    r = _member_prompt(member_prompt_rewards)
    if r.size == 0:
        return float("nan")
    modal_counts = [np.unique(column, return_counts=True)[1].max() for column in r.T]  # (P,)
    return float(np.mean([1.0 - count / r.shape[0] for count in modal_counts]))


def no_signal_reason(
    correlations: Sequence[float],
    skipped: Sequence[bool | float],
    window: int,
    threshold: float,
    directions: int,
) -> str | None:
    """Why the updates so far carry no ES signal, or ``None`` (signal, or not judged yet).

    ``correlations`` are the updates' split-half correlations (r_ab of the members, or of the
    antithetic pairs' differences) and ``skipped`` their skip flags, aligned; ``directions`` is N
    (members, or pairs). With fewer than ``window`` updates: ``None``. More than half of the last
    ``window`` skipped (all R_i tied) → that. Otherwise, when the number of updates is a multiple
    of ``window`` (at least two): the upper end of the 95 % interval of the run-level signal
    √(ρ̄·N·T) (:func:`~es_lightning.es.run_signal.measure_run_signal`) stayed below ``threshold``
    over all of them and over all but the last ``window`` → that (fewer than 2 finite
    correlations, e.g. one prompt per update: not judged).
    """
    if len(correlations) != len(skipped):
        raise ValueError(f"{len(correlations)} correlations but {len(skipped)} skip flags")
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    if len(correlations) < window:
        return None
    n_skipped = int(np.sum(np.asarray(skipped[-window:], dtype=np.float64) > 0))
    if n_skipped > window / 2:
        return (
            f"{n_skipped} of the last {window} updates were skipped (all member rewards tied, so the "
            "weights did not move)"
        )
    if len(correlations) % window or len(correlations) < 2 * window:
        return None
    earlier = measure_run_signal(correlations[:-window], skipped[:-window], directions, level=SIGNAL_LEVEL)
    found = measure_run_signal(correlations, skipped, directions, level=SIGNAL_LEVEL)
    signal, _, high = found.signal
    if not all(np.isfinite(h) and h < threshold for h in (earlier.signal[2], high)):
        return None
    rho = found.interval
    return (
        f"over its {found.applied:g} applied updates the run-level signal sqrt(rho*N*T) is {signal:.2f}, "
        f"at most {high:.2f} (< {threshold:g}; pooled reliability rho {rho.reliability:.3f} "
        f"[{rho.low:.3f}, {rho.high:.3f}], N = {directions}): its summed updates cannot be told from "
        "a random walk"
    )


def no_signal_message(reason: str) -> str:
    """The warning line for ``reason``: what it means, the likely causes and the knobs."""
    return (
        f"ES sees no signal: {reason}. Likely causes: sigma too small for this model (members behave alike; raise strategy.sigma), too "
        "few prompts per update (raise trainer.batch_size), or greedy rollouts / too little "
        "sampling diversity (raise module.train_sampling.temperature or "
        "strategy.responses_per_prompt)."
    )


def constant_reward_message(count: int, window: int, rewards: Sequence[float]) -> str:
    """The warning line when every response got one and the same reward in ``count`` of the last
    ``window`` updates (``rewards``: those constants): the reward, not σ, is what gives no signal."""
    values = ", ".join(f"{v:g}" for v in sorted(set(rewards))[:3])
    return (
        f"ES sees no signal: in {count} of the last {window} updates every response got the same "
        f"reward ({values}), so the members tied and the weights did not move. The reward is the "
        "likely cause: check each function's rewards on this model's completions "
        "(train/rewards/<function> in metrics.jsonl, samples.jsonl) and give partial credit where a "
        "function is always 0 or always 1 for this model (a larger strategy.sigma helps only where "
        "perturbed models can earn another reward)."
    )


class SignalMonitor:
    """The no-signal verdict over the run's updates, reported once.

    Args:
        window: the skip rule reads the last ``window`` updates; the run-level rule is judged
            every ``window`` updates.
        threshold: the run-level signal whose interval's upper end must be reached.
        directions: N, the members (one-point) or the antithetic pairs.
    """

    def __init__(self, window: int, threshold: float, directions: int) -> None:
        if window < 1:
            raise ValueError(f"window must be >= 1, got {window}")
        self.window, self.threshold, self.directions = window, threshold, directions
        self.correlations: list[float] = []
        self.skipped: list[bool] = []
        self.constant: list[float | None] = []
        self.warned = False

    def observe(self, correlation: float, skipped: bool, constant_reward: float | None = None) -> str | None:
        """Record one update (its split-half correlation r_ab, whether it was skipped, and the
        reward every response got when all got the same, else ``None``); the warning message the
        first time the run has no signal, else None. When every response got one reward in more
        than half of the last ``window`` updates, the message names the reward as the cause."""
        self.correlations.append(float(correlation))
        self.skipped.append(bool(skipped))
        self.constant.append(None if constant_reward is None else float(constant_reward))
        if self.warned:
            return None
        reason = no_signal_reason(
            self.correlations, self.skipped, self.window, self.threshold, self.directions
        )
        if reason is None:
            return None
        self.warned = True
        constants = [c for c in self.constant[-self.window :] if c is not None]
        if len(constants) > self.window / 2:
            return constant_reward_message(len(constants), self.window, constants)
        return no_signal_message(reason)
