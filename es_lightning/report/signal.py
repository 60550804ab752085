"""ES's signal per update, per run group: did the members' rewards rank them, or was it noise?

For every method, forgetting method and ablation value whose runs logged the ES diagnostics
(:mod:`es_lightning.es.diagnostics`; pipelines: their ES stages), per run:

    reliability = ρ̄ = 2·mean_t(r_ab,t) / (1 + mean_t(r_ab,t))     over the run's updates t
    flip_rate   = mean_t es/flip_rate
    skipped     = share of updates with es/skipped = 1 (all member rewards tied)

r_ab,t is ``es/reward_split_half_corr``; runs logged before it existed give it back from
``es/reward_reliability`` as ρ/(2 − ρ) (a clipped ρ = −1 only bounds r_ab ≤ −1/3, so such a run's
ρ̄ reads a little high). Updates whose halves did not vary over the members (NaN) are left out.
Each is a Stat over seeds. ρ̄ ≈ 0 says the updates were a random walk (a method that did nothing
reads so too; any gain then came from a bias too small to see in one update); the no-signal
warning of the runs fires below ``signal_threshold`` (0.1 by default).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from es_lightning.es.diagnostics import correlation_from_reliability, pooled_reliability
from es_lightning.report.readers import read_series
from es_lightning.report.stats import stat, stat_json

Dirs = dict[int, Path]


def run_signal(run_dir: Path) -> dict[str, float] | None:
    """``{updates, reliability, flip_rate, skipped}`` of one run, or ``None`` (no ES updates)."""
    series = read_series(run_dir)
    skipped = [v for _, v in series.get("es/skipped", [])]
    if not skipped:
        return None
    correlations = [v for _, v in series.get("es/reward_split_half_corr", [])]
    if not correlations:
        correlations = [correlation_from_reliability(v) for _, v in series.get("es/reward_reliability", [])]
    flips = [v for _, v in series.get("es/flip_rate", [])]
    out = {"updates": float(len(skipped)), "skipped": sum(v > 0 for v in skipped) / len(skipped)}
    out["reliability"] = pooled_reliability(correlations) if correlations else float("nan")
    out["flip_rate"] = sum(flips) / len(flips) if flips else float("nan")
    return out


def _group(dirs: Dirs) -> dict[str, Any] | None:
    runs = {seed: found for seed, d in sorted(dirs.items()) if (found := run_signal(d)) is not None}
    if not runs:
        return None
    fields = ("updates", "reliability", "flip_rate", "skipped")
    return {f: stat_json(stat({s: r[f] for s, r in runs.items() if r[f] == r[f]})) for f in fields}


def collect_signal(
    methods: dict[str, Dirs], forgetting: dict[str, Dirs], ablations: dict[str, dict[str, Dirs]]
) -> dict[str, Any]:
    """``{group: {updates, reliability, flip_rate, skipped}}`` (each a Stat over seeds) for every
    group with ES updates: methods by name, ``forgetting/<method>``, ``<ablation>/<value>``."""
    groups = {**methods, **{f"forgetting/{m}": d for m, d in forgetting.items()}}
    groups |= {f"{a}/{v}": d for a, values in ablations.items() for v, d in values.items()}
    return {name: found for name, dirs in groups.items() if (found := _group(dirs)) is not None}
