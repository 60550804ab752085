"""A method against GRPO's trajectory: GRPO's Pass@K at the method's own Pass@1.

GRPO's checkpoints, evaluated every ``k`` updates with the final protocol (step 0 is the base),
trace a path ``(x_t, y_t) = (Pass@1, Pass@K)`` over updates ``t``. A point ``(x, y)`` is compared
with the path where the path has its Pass@1: on every segment ``t → t + 1`` whose ends enclose
``x`` the path's coverage there is

    y_t + (x − x_t) · (y_{t+1} − y_t) / (x_{t+1} − x_t)        (``max(y_t, y_{t+1})`` if ``x_t = x_{t+1}``)

and ``y*(x)`` is the largest of them: the most GRPO ever covered while as accurate as the method
(a path that turns back in Pass@1, as a noisy one does, crosses ``x`` several times). Where the
path never reaches ``x`` (the method is more accurate than GRPO ever was, or less than the base),
``y*`` is the ``y`` of the path's point nearest in Pass@1 (GRPO at its most, or least, accurate).
Then ``Δ = y − y*(x)``: above 0 the method covers more than GRPO did when GRPO was as accurate; a
method on GRPO's path, or one that did nothing (at step 0), gives ``Δ ≤ 0``.

:func:`matched_difference` recomputes ``Δ`` on every bootstrap resample of the problems (the
method's and the path's Pass@1 and Pass@K from the same resample), so its interval carries the
noise of both.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from es_lightning.report.bootstrap import Interval
from es_lightning.report.intervals import ProblemBootstrap

MATCHED = "paired bootstrap over problems, at matched Pass@1"


def path_coverage(path_x: np.ndarray, path_y: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``y*(x)`` of each row (paths ``(B, T)``, points ``(B,)`` → ``(B,)``) and whether the path
    reached ``x`` (``False``: ``y*`` is the nearest end's)."""
    path_x, path_y = np.atleast_2d(path_x), np.atleast_2d(path_y)
    x = np.atleast_1d(np.asarray(x, dtype=np.float64))[:, None]  # (B, 1)
    x0, x1, y0, y1 = path_x[:, :-1], path_x[:, 1:], path_y[:, :-1], path_y[:, 1:]  # (B, T − 1)
    inside = (np.minimum(x0, x1) <= x) & (x <= np.maximum(x0, x1))
    width = x1 - x0
    on_segment = np.where(
        width == 0, np.maximum(y0, y1), y0 + (x - x0) * (y1 - y0) / np.where(width == 0, 1.0, width)
    )
    reached = inside.any(axis=1)
    best = np.where(inside, on_segment, -np.inf).max(axis=1)
    rows = np.arange(len(path_x))
    nearest = np.where(
        x[:, 0] > path_x.max(axis=1), path_y[rows, path_x.argmax(axis=1)], path_y[rows, path_x.argmin(axis=1)]
    )
    return np.where(reached, best, nearest), reached


def path_values(
    boot: ProblemBootstrap, names: Sequence[str], k: int, seeds: Sequence[int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Pass@1 and Pass@k of each named point: estimates ``(T,)`` and resamples ``(B, T)``, computed
    for all points in one stack (a point equal to a path point gets bit-identical numbers)."""
    ones = np.stack([boot.values(p, 1, seeds) for p in names])  # (T, S, P)
    ks = np.stack([boot.values(p, k, seeds) for p in names])
    return ones.mean(axis=(1, 2)), ks.mean(axis=(1, 2)), boot.resampled(ones).T, boot.resampled(ks).T


def matched_difference(boot: ProblemBootstrap, method: str, path: Sequence[str], k: int) -> Interval | None:
    """``Δ = Pass@k(method) − y*(Pass@1(method))`` on the path of named points ``path`` (in update
    order, each a method of ``boot``); ``None`` when a point lacks outcomes or no seed is shared."""
    seeds = boot.seeds(method, *path)
    if not seeds or not all(boot.has(p, k) for p in (method, *path)):
        return None
    xs, ys, xs_b, ys_b = path_values(boot, [*path, method], k, seeds)  # the method is the last column
    y_star, _ = path_coverage(xs[None, :-1], ys[None, :-1], xs[-1:])
    estimate = float(ys[-1] - y_star[0])
    y_star_b, reached_b = path_coverage(xs_b[:, :-1], ys_b[:, :-1], xs_b[:, -1])
    resampled = ys_b[:, -1] - y_star_b
    low, high = np.quantile(resampled, [1.0 - boot.level, boot.level])
    beyond = int((~reached_b).sum())
    note = None
    if beyond:
        note = (
            f"its Pass@1 lies outside GRPO's path in {beyond} of {len(resampled)} resamples "
            "(compared with the path's nearest end)"
        )
    return Interval(estimate, float(low), float(high), boot.level, MATCHED, len(boot.problems), note)
