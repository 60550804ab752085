"""A method against GRPO's trajectory: GRPO's Pass@K at the method's own Pass@1.

GRPO's checkpoints, evaluated every ``k`` updates with the final protocol (step 0 is the base),
trace a path ``(x_t, y_t) = (Pass@1, Pass@K)`` over steps ``t``. A point ``(x, y)`` is compared
with the path where the path first reaches its Pass@1: on the first segment ``t → t + 1`` whose
ends enclose ``x``,

    y*(x) = y_t + (x − x_t) · (y_{t+1} − y_t) / (x_{t+1} − x_t)

(``y_t`` when the segment is vertical), and
``Δ = y − y*(x)``: above 0 the method covers more than GRPO did when GRPO was as accurate; a
method on GRPO's path, or one that did nothing (it sits at step 0), gives ``Δ ≈ 0``. A point whose
Pass@1 the path never reaches (below the base's, above GRPO's best) has no ``y*``.

:func:`matched_difference` recomputes ``Δ`` on every bootstrap resample of the problems (the
method's and the path's Pass@1 and Pass@K from the same resample), so its interval carries the
noise of both; resamples where the path does not reach ``x`` are counted, and when they exceed
``1 − level`` of all the interval is not given.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from es_lightning.report.bootstrap import BOOTSTRAP, Interval
from es_lightning.report.intervals import ProblemBootstrap

MATCHED = "paired bootstrap over problems, at matched Pass@1"


def first_crossing(path_x: np.ndarray, path_y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``y*(x)`` of each row: paths ``(B, T)``, points ``(B,)`` → ``(B,)`` (NaN: never reached)."""
    path_x, path_y = np.atleast_2d(path_x), np.atleast_2d(path_y)
    x = np.atleast_1d(np.asarray(x, dtype=np.float64))[:, None]  # (B, 1)
    x0, x1 = path_x[:, :-1], path_x[:, 1:]  # (B, T − 1) segment ends
    y0, y1 = path_y[:, :-1], path_y[:, 1:]
    inside = (np.minimum(x0, x1) <= x) & (x <= np.maximum(x0, x1))
    width = x1 - x0
    safe = np.where(width == 0, 1.0, width)
    y = np.where(width == 0, y0, y0 + (x - x0) * (y1 - y0) / safe)
    first = np.argmax(inside, axis=1)  # the first enclosing segment (0 when none: masked below)
    out = y[np.arange(len(y)), first]
    return np.where(inside.any(axis=1), out, np.nan)


def path_values(
    boot: ProblemBootstrap, path: Sequence[str], k: int, seeds: Sequence[int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Pass@1 and Pass@k of each path point: point estimates ``(T,)`` and resamples ``(B, T)``."""
    ones = np.stack([boot.values(p, 1, seeds) for p in path])  # (T, S, P)
    ks = np.stack([boot.values(p, k, seeds) for p in path])
    return ones.mean(axis=(1, 2)), ks.mean(axis=(1, 2)), boot.resampled(ones).T, boot.resampled(ks).T


def matched_difference(boot: ProblemBootstrap, method: str, path: Sequence[str], k: int) -> Interval | None:
    """``Δ = Pass@k(method) − y*(Pass@1(method))`` on the path of named points ``path`` (in step
    order, each a method of ``boot``); ``None`` when a point lacks outcomes or no seed is shared."""
    seeds = boot.seeds(method, *path)
    if not seeds or not all(boot.has(p, k) for p in (method, *path)):
        return None
    x_values, y_values = boot.values(method, 1, seeds), boot.values(method, k, seeds)
    px, py, px_b, py_b = path_values(boot, path, k, seeds)
    x, y = float(x_values.mean()), float(y_values.mean())
    estimate = float(y - first_crossing(px[None], py[None], np.array([x]))[0])
    resampled = boot.resampled(y_values) - first_crossing(px_b, py_b, boot.resampled(x_values))
    unreached = int(np.isnan(resampled).sum())
    note = f"the path does not reach its Pass@1 in {unreached} of {len(resampled)} resamples"
    n = len(boot.problems)
    if np.isnan(estimate) or unreached > (1.0 - boot.level) * len(resampled):
        return Interval(estimate, float("nan"), float("nan"), boot.level, MATCHED, n, note)
    low, high = np.quantile(resampled[~np.isnan(resampled)], [1.0 - boot.level, boot.level])
    return Interval(estimate, float(low), float(high), boot.level, MATCHED, n, note if unreached else None)


__all__ = ["BOOTSTRAP", "MATCHED", "first_crossing", "matched_difference", "path_values"]
