"""The power of a claim judged by the seed-level t test: how often a study resolves it, either way
(``python -m es_lightning.report.power SIGMA DELTA [MARGIN] [SEEDS]`` prints a table).

    >>> r = resolution(effect=0.0, sd=0.006, seeds=3, refute_below=0.03)
    >>> round(r["not reproduced"], 2), round(r["reproduced"], 2)
    (0.95, 0.05)
"""

from __future__ import annotations

import math
import sys

import numpy as np

from es_lightning.report.stats import t_quantile


def resolution(
    effect: float,
    sd: float,
    seeds: int = 3,
    threshold: float = 0.0,
    refute_below: float | None = None,
    level: float = 0.95,
    simulations: int = 20000,
    seed: int = 0,
) -> dict[str, float]:
    """The chances of each verdict for a claim whose per-seed values are ``N(effect, sd²)``."""
    if seeds < 2:
        raise ValueError("resolution: the seed-level t test needs at least 2 seeds")
    refute_below = threshold if refute_below is None else refute_below
    draws = np.random.default_rng(seed).normal(effect, sd, size=(simulations, seeds))
    mean, s = draws.mean(axis=1), draws.std(axis=1, ddof=1)
    half = t_quantile(level, seeds - 1) * s / math.sqrt(seeds)
    up = mean - half > threshold
    down = ~up & (mean + half < refute_below)
    return {
        "reproduced": float(up.mean()),
        "not reproduced": float(down.mean()),
        "not resolved": float((~up & ~down).mean()),
    }


def main(argv: list[str]) -> None:
    sd, effect = float(argv[0]), float(argv[1])
    margin = float(argv[2]) if len(argv) > 2 else 0.0
    seeds = int(argv[3]) if len(argv) > 3 else 3
    print("| effect | reproduced | not reproduced | not resolved |\n|---|---|---|---|")
    for e in (0.0, effect / 2, effect, -effect / 2):
        r = resolution(e, sd, seeds, refute_below=margin)
        print(f"| {e:+g} | {r['reproduced']:.2f} | {r['not reproduced']:.2f} | {r['not resolved']:.2f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
