"""Where each method's Pass@1 gain lies: on problems the starting model already solves greedily, or
on the others (a descriptive table, no verdict).

A method that sharpens the starting model's distribution gains most where the model's greedy
answer is already right (its samples move toward the mode); one that reaches new solutions gains
elsewhere too. For each method and each group of problems (the base's greedy answer right / wrong):
the mean per-problem Pass@1 change against the base, pooled over seeds, with the seed-level t and
two-level bootstrap interval (:mod:`~es_lightning.report.evidence`) and the number of problems.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from es_lightning.report.intervals import ProblemBootstrap


def base_greedy(report: dict[str, Any]) -> np.ndarray | None:
    """Per problem, whether the base's greedy answer was right (``None``: not recorded)."""
    greedy = ((report.get("outcomes") or {}).get("greedy") or {}).get("base") or {}
    if not greedy:
        return None
    return np.asarray(next(iter(greedy.values())), dtype=bool)


def gain_split(report: dict[str, Any], boot: ProblemBootstrap | None) -> dict[str, Any] | None:
    """``{method: {"solved": interval, "unsolved": interval, "n_solved", "n_unsolved"}}``."""
    solved = base_greedy(report)
    if boot is None or solved is None or len(solved) != len(boot.problems) or not boot.has("base"):
        return None
    out: dict[str, Any] = {}
    for method in boot.counts:
        if method == "base" or "@" in method or not boot.seeds(method, "base"):
            continue
        seeds = boot.seeds(method, "base")
        delta = boot.values(method, 1, seeds) - boot.values("base", 1, seeds)  # (S, P)
        row: dict[str, Any] = {"n_solved": int(solved.sum()), "n_unsolved": int((~solved).sum())}
        for name, mask in (("solved", solved), ("unsolved", ~solved)):
            if mask.any():
                sub = ProblemBootstrap(
                    {
                        "m": boot.m,
                        "problems": [p for p, keep in zip(boot.problems, mask) if keep],
                        "counts": {},
                    },
                    boot.level,
                    len(boot.indices),
                    boot.seed,
                )
                row[name] = sub.evidence(delta[:, mask]).to_json()
        out[method] = row
    return out
