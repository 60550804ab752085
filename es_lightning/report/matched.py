"""A method against GRPO's trajectory: GRPO's Pass@K at the method's own Pass@1.

GRPO's checkpoints, evaluated every ``k`` updates with the final protocol (step 0 is the base),
trace a path ``(x_t, y_t) = (Pass@1, Pass@K)`` over updates ``t``. A point ``(x, y)`` is compared
with the path where the path has its Pass@1: on every segment ``t → t + 1`` whose ends enclose
``x`` the path's coverage there is

    y_t + (x − x_t) · (y_{t+1} − y_t) / (x_{t+1} − x_t)        (``max(y_t, y_{t+1})`` if ``x_t = x_{t+1}``)

and ``y*(x)`` is the largest of them: the most GRPO ever covered while as accurate as the method
(a path that turns back in Pass@1, as a noisy one does, crosses ``x`` several times). Where the
path never reaches ``x`` (the method is more accurate than GRPO ever was, or less than the base),
``y*`` is the ``y`` of the path's point nearest in Pass@1 (GRPO at its most, or least, accurate;
of points tied there, the largest ``y``).
Then ``Δ = y − y*(x)``: above 0 the method covers more than GRPO did when GRPO was as accurate; a
method on GRPO's path, or one that did nothing (at step 0), gives ``Δ ≤ 0``.

:func:`matched_evidence` gives ``Δ`` with what a verdict reads (:mod:`~es_lightning.report.evidence`):
``Δ_s`` of each seed against the same seed's path, and ``Δ`` recomputed on every two-level
bootstrap resample (seeds × problems; the method's and the path's Pass@1 and Pass@K from the same
resample), so its interval carries the noise of both and the spread of the seeds. The path's
``x`` and ``y`` may come from different tasks (the forgetting setting: in-domain Pass@1 against
held-out Pass@1), each with its own problems; the seeds drawn are shared.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from es_lightning.report.evidence import Evidence
from es_lightning.report.intervals import ProblemBootstrap


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
    at_max = np.where(path_x == path_x.max(axis=1, keepdims=True), path_y, -np.inf).max(axis=1)
    at_min = np.where(path_x == path_x.min(axis=1, keepdims=True), path_y, -np.inf).max(axis=1)
    nearest = np.where(x[:, 0] > path_x.max(axis=1), at_max, at_min)  # ties: the larger coverage
    return np.where(reached, best, nearest), reached


def _resampled(boot: ProblemBootstrap, values: np.ndarray) -> np.ndarray:
    """``(T, S, P)`` per-problem values → ``(T, B)`` two-level resampled pooled values, one point at
    a time (bounded memory)."""
    return np.stack([boot.two_level(boot.per_seed_resampled(v)) for v in values])


def matched_evidence(
    x: tuple[ProblemBootstrap, np.ndarray], y: tuple[ProblemBootstrap, np.ndarray]
) -> tuple[Evidence, int]:
    """``Δ = y(method) − y*(x(method))`` on a path, with its evidence, and in how many resamples the
    method's ``x`` lay beyond the path (compared with its nearest end).

    ``x`` and ``y``: a bootstrap and ``(T + 1, S, P)`` per-problem values, the path's ``T`` points
    in update order, then the method (the last row), on the same seeds in the same order.
    """
    (boot_x, xv), (boot_y, yv) = x, y
    xs, ys = xv.mean(axis=(1, 2)), yv.mean(axis=(1, 2))
    y_star, _ = path_coverage(xs[None, :-1], ys[None, :-1], xs[-1:])
    estimate = float(ys[-1] - y_star[0])
    per_seed = []
    for s in range(xv.shape[1]):
        xs_s, ys_s = xv[:, s].mean(axis=-1), yv[:, s].mean(axis=-1)
        star, _ = path_coverage(xs_s[None, :-1], ys_s[None, :-1], xs_s[-1:])
        per_seed.append(float(ys_s[-1] - star[0]))
    xb, yb = _resampled(boot_x, xv).T, _resampled(boot_y, yv).T  # (B, T + 1)
    star_b, reached = path_coverage(xb[:, :-1], yb[:, :-1], xb[:, -1])
    return Evidence(estimate, tuple(per_seed), yb[:, -1] - star_b, boot_x.level), int((~reached).sum())


def matched_difference(
    boot: ProblemBootstrap, method: str, path: Sequence[str], k: int
) -> tuple[Evidence, int] | None:
    """``Pass@k(method) − y*(Pass@1(method))`` on the path of named points ``path`` (in update order,
    each a method of ``boot``); ``None`` when a point lacks outcomes or no seed is shared."""
    seeds = boot.seeds(method, *path)
    if not seeds or not all(boot.has(p, k) for p in (method, *path)):
        return None
    names = [*path, method]
    ones = np.stack([boot.values(p, 1, seeds) for p in names])  # (T + 1, S, P)
    ks = np.stack([boot.values(p, k, seeds) for p in names])
    return matched_evidence((boot, ones), (boot, ks))


def beyond_note(beyond: int, resamples: int) -> str | None:
    """What a matched comparison says when the method's Pass@1 left the path in some resamples."""
    if not beyond:
        return None
    return (
        f"its Pass@1 lies outside the path in {beyond} of {resamples} resamples "
        "(compared with the path's nearest end)"
    )
