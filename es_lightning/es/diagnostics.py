"""Is there an ES signal? Per-update diagnostics of the member rewards, and the no-signal verdict.

With r[i, p] member i's mean reward on prompt p and the prompts split by even and odd position::

    r_ab  = Pearson corr over members i of (mean_{p even} r[i, p], mean_{p odd} r[i, p])
    ρ     = 2·r_ab / (1 + r_ab)        (Spearman–Brown, es/reward_reliability)

ρ ≈ 1: the rewards rank the members; ρ ≈ 0: the update is a random walk. ρ is clipped to [−1, 1],
NaN when a half does not vary over the members. Over many updates ρ̄ is the Spearman–Brown value of
the *mean* r_ab (:func:`pooled_reliability`). Antithetic pairs are measured on their differences
d[j, p] = r[2j, p] − r[2j+1, p]. ``es/flip_rate`` is the share of rewards that differ from their
prompt's modal reward.

No signal (:func:`no_signal_reason`): most of the last ``window`` updates skipped, or the upper 95 %
bound of the run-level signal √(ρ̄·N·T) (:mod:`es_lightning.es.run_signal`) below a threshold at
two looks in a row, one every ``window`` updates. :class:`SignalMonitor` warns once per run.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from es_lightning.es.run_signal import measure_run_signal, reliability_interval, spearman_brown

SIGNAL_LEVEL = 0.95
"""The two-sided level of the run-level signal's interval that the no-signal warning reads."""


def _member_prompt(member_prompt_rewards: np.ndarray) -> np.ndarray:
    r = np.asarray(member_prompt_rewards, dtype=np.float64)
    if r.ndim != 2:
        raise ValueError(f"member_prompt_rewards must have shape (N, P), got {r.shape}")
    return r


def split_half_correlation(member_prompt_rewards: np.ndarray) -> float:
    """r_ab of the members' mean rewards on the even- and odd-position prompts (module docstring)."""
    r = _member_prompt(member_prompt_rewards)
    n_members, n_prompts = r.shape
    if n_members < 2 or n_prompts < 2:
        return float("nan")
    half_a, half_b = r[:, 0::2].mean(axis=1), r[:, 1::2].mean(axis=1)  # (N,), (N,)
    if np.all(half_a == half_a[0]) or np.all(half_b == half_b[0]):
        return float("nan")
    return float(np.clip(np.corrcoef(half_a, half_b)[0, 1], -1.0, 1.0))


def split_half_reliability(member_prompt_rewards: np.ndarray) -> float:
    """ρ, the Spearman–Brown split-half reliability of one update's member rewards (module docstring)."""
    return spearman_brown(split_half_correlation(member_prompt_rewards))


def pooled_reliability(correlations: Sequence[float]) -> float:
    """ρ̄: the Spearman–Brown value of the mean finite r_ab (NaN when none is finite)."""
    return reliability_interval(correlations).reliability


def correlation_from_reliability(reliability: float) -> float:
    """r_ab from a logged ρ, ρ / (2 − ρ) (a clipped ρ = −1 gives −1/3); NaN stays NaN."""
    if not np.isfinite(reliability):
        return float("nan")
    return float(reliability / (2.0 - reliability))


def pair_differences(member_prompt_rewards: np.ndarray) -> np.ndarray:
    """d[j, p] = r[2j, p] − r[2j+1, p] of an antithetic population's (N, P) table: shape (N/2, P)."""
    r = _member_prompt(member_prompt_rewards)
    if r.shape[0] % 2:
        raise ValueError(f"antithetic members come in (+, −) pairs; got {r.shape[0]} members")
    return r[0::2] - r[1::2]


def antithetic_split_half_correlation(member_prompt_rewards: np.ndarray) -> float:
    """r_ab^d, the split-half correlation of the antithetic pairs' differences (NaN as r_ab)."""
    return split_half_correlation(pair_differences(member_prompt_rewards))


def flip_rate(member_prompt_rewards: np.ndarray) -> float:
    """The share of rewards that differ from their prompt's modal reward (NaN when empty)."""
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
    """Why the updates so far carry no ES signal (module docstring), or ``None``: ``correlations``
    and ``skipped`` per update, ``directions`` N (members or pairs)."""
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
    """The warning when every response got one reward in ``count`` of the last ``window`` updates."""
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
        """Record one update; the warning the first time the run has no signal, else ``None``."""
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
