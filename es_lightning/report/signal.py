"""ES's signal per run group: did the members' rewards rank them, and could the updates add up?
Per run and pooled ρ̄ with its t interval over updates and the run-level signal √(ρ̄·N·T)
(:mod:`es_lightning.es.run_signal`); a permuted control's signal is 0 by construction.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from es_lightning.es.diagnostics import correlation_from_reliability, pooled_reliability
from es_lightning.es.run_signal import RunSignal, applied, measure_run_signal
from es_lightning.evaluation.offline import finite_or_none
from es_lightning.report.readers import read_series, run_config
from es_lightning.report.stats import fmt_stat, stat, stat_json
from es_lightning.report.tables import interval_cell, table

Dirs = dict[int, Path]
LEVEL = 0.95
"""The two-sided level of ρ̄'s interval over updates and of the run-level signal's bounds."""


def es_settings(run_dir: Path) -> dict[str, Any] | None:
    """The ES strategy's ``init_args`` in the run's ``config.yaml``, or ``None``."""
    config = run_config(run_dir)
    if config is None:
        return None
    strategies = [config.get("strategy")] + [
        s.get("strategy") for s in config.get("stages") or [] if isinstance(s, dict)
    ]
    for strategy in strategies:
        if isinstance(strategy, dict) and str(strategy.get("class_path", "")).endswith("ESStrategy"):
            return strategy.get("init_args") or {}
    return None


def _directions(settings: dict[str, Any] | None) -> tuple[int | None, int | None]:
    """(members, antithetic pairs) of the run's populations; ``None`` where unknown or absent."""
    if settings is None or "population_size" not in settings:
        return None, None
    n = int(settings["population_size"])
    if settings.get("estimator", "one_point") != "antithetic":
        return n, None
    return (2 * n, n) if settings.get("antithetic_budget") == "directions" else (n, n // 2)


def _series(run_dir: Path) -> dict[str, Any] | None:
    series = read_series(run_dir)
    if not series.get("es/skipped"):
        return None
    steps = [step for step, _ in series["es/skipped"]]

    def aligned(key: str, fallback: str | None = None) -> list[float] | None:
        values = dict(series.get(key, []))
        if not values and fallback and series.get(fallback):
            values = {s: correlation_from_reliability(v) for s, v in series[fallback]}
        return [values.get(step, math.nan) for step in steps] if values else None

    settings = es_settings(run_dir)
    members, pairs = _directions(settings)
    return {
        "permuted": (settings or {}).get("reward_control") == "permuted",
        "skipped": [v > 0 for _, v in series["es/skipped"]],
        "members": aligned("es/reward_split_half_corr", "es/reward_reliability"),
        "pairs": aligned("es/antithetic_diff_split_half_corr", "es/antithetic_diff_reliability"),
        "flips": [v for _, v in series.get("es/flip_rate", [])],
        "n_members": members,
        "n_pairs": pairs,
    }


def _block(found: RunSignal, with_signal: bool) -> dict[str, Any]:
    """The block's numbers, ``None`` where not finite."""
    interval = found.interval
    signal, low, high = found.signal if with_signal else (math.nan, math.nan, math.nan)
    return finite_or_none({
        "reliability": interval.reliability, "low": interval.low, "high": interval.high,
        "level": interval.level, "measured": interval.measured, "updates": found.updates,
        "excluded": found.excluded, "applied_per_run": found.applied,
        "directions": found.directions if with_signal else None,
        "signal": signal, "signal_low": low, "signal_high": high,
    })  # fmt: skip


def _pooled(runs: list[dict[str, Any]], key: str, count: str, with_signal: bool) -> dict[str, Any] | None:
    """One block over ``runs`` (their ``key`` correlations concatenated), or None when none has them."""
    runs = [r for r in runs if r[key] is not None]
    if not runs:
        return None
    correlations = [c for r in runs for c in r[key]]
    skipped = [s for r in runs for s in r["skipped"]]
    counts = {r[count] for r in runs}
    n = counts.pop() if len(counts) == 1 else None
    found = measure_run_signal(correlations, skipped, n or 1, runs=len(runs), level=LEVEL)
    block = _block(found, with_signal and n is not None)
    if with_signal and all(r["permuted"] for r in runs):  # the update's z ignore the members: no signal
        block.update(signal=0.0, signal_low=0.0, signal_high=0.0, rewards_permuted=True)
    return block


def _blocks(runs: list[dict[str, Any]]) -> dict[str, Any]:
    antithetic = any(r["n_pairs"] is not None for r in runs)
    return {
        "pooled": _pooled(runs, "members", "n_members", with_signal=not antithetic),
        "antithetic": _pooled(runs, "pairs", "n_pairs", with_signal=True),
    }


def _run_numbers(found: dict[str, Any]) -> dict[str, float]:
    skipped, correlations, flips = found["skipped"], found["members"], found["flips"]
    out = {"updates": float(len(skipped)), "skipped": sum(skipped) / len(skipped)}
    out["reliability"] = pooled_reliability(applied(correlations, skipped)) if correlations else float("nan")
    out["flip_rate"] = sum(flips) / len(flips) if flips else float("nan")
    return out


def run_signal(run_dir: Path) -> dict[str, float] | None:
    """``{updates, reliability, flip_rate, skipped}`` of one run, or ``None`` (no ES updates)."""
    found = _series(run_dir)
    return None if found is None else _run_numbers(found)


def _group(dirs: Dirs) -> dict[str, Any] | None:
    series = {seed: found for seed, d in sorted(dirs.items()) if (found := _series(d)) is not None}
    if not series:
        return None
    runs = {seed: _run_numbers(found) for seed, found in series.items()}
    fields = ("updates", "reliability", "flip_rate", "skipped")
    out: dict[str, Any] = {
        f: stat_json(stat({s: r[f] for s, r in runs.items() if r[f] == r[f]})) for f in fields
    }
    out.update(_blocks(list(series.values())))
    out["per_seed"] = {str(seed): _blocks([found]) for seed, found in series.items()}
    return out


def collect_signal(
    methods: dict[str, Dirs], forgetting: dict[str, Dirs], ablations: dict[str, dict[str, Dirs]]
) -> dict[str, Any]:
    """The signal of every run group with ES updates."""
    groups = {**methods, **{f"forgetting/{m}": d for m, d in forgetting.items()}}
    groups |= {f"{a}/{v}": d for a, values in ablations.items() for v, d in values.items()}
    return {name: found for name, dirs in groups.items() if (found := _group(dirs)) is not None}


def _percent(value: Any) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def signal_section(report: dict[str, Any]) -> list[str]:
    """REPORT.md's section on ES's signal per run group."""
    signal = report.get("signal")
    if not signal:
        return []
    out = ["## ES's signal: per update and over the run", ""]
    out.append(
        "Did the members' rewards rank the members, and could the run's updates add up? Per run group "
        "(every update of every seed pooled): ρ̄, the split-half reliability of the member rewards "
        "(Spearman–Brown of the mean correlation, over the members, of each update's rewards on its "
        "even- and odd-position prompts), with its 95% t interval over updates; the share of updates "
        "left out of it (skipped because every member scored alike, or a half of the prompts on which "
        "they all did); and the run-level signal √(ρ̄·N·T) (N members, T applied updates per run), "
        "the expected z of a run's summed gain against the random walk its permuted control makes, "
        "with the bounds from ρ̄'s. Below 2 a run could not beat its control even with a noiseless "
        "evaluation; a ρ̄ whose interval holds 0 can still add up to a signal well above 2, and the "
        "runs' no-signal warning fires only when the upper bound stays below 2. For antithetic pairs "
        "the update weighs the pairs' differences R(θ+σε) − R(θ−σε): their ρ̄_d gives that signal "
        "(N the pairs). A permuted-reward control's ρ̄ is that of its true rewards, but its updates "
        "apply shuffled ones: its signal is 0. Also the share of (member, prompt) rewards that differ from the prompt's "
        "modal reward (flip rate, mean ± sd over seeds)."
    )
    out.append("")
    body = []
    for name, row in signal.items():
        pooled, pairs = row.get("pooled"), row.get("antithetic")
        signal_block = pairs if pairs and pairs.get("signal") is not None else pooled
        signal_cell = interval_cell(signal_block, "signal", ".1f", "signal_low", "signal_high")
        if (signal_block or {}).get("rewards_permuted"):
            signal_cell = "0 (rewards permuted)"
        updates = (row.get("updates") or {}).get("mean", 0)
        body.append(
            [
                name,
                f"{updates:.0f}",
                _percent((pooled or {}).get("excluded")),
                interval_cell(pooled, "reliability", ".3f"),
                signal_cell,
                interval_cell(pairs, "reliability", ".3f"),
                fmt_stat(row.get("flip_rate"), scale=100.0),
                fmt_stat(row.get("skipped"), scale=100.0),
            ]
        )
    head = ["runs", "updates", "left out (%)", "ρ̄ [95% CI]", "√(ρ̄NT) [95% CI]", "pairs' ρ̄_d [95% CI]",
            "flip rate (%)", "skipped (%)"]  # fmt: skip
    return [*out, table(head, body), ""]
