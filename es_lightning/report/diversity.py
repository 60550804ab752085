"""Population diversity in the report: how differently ES's members succeed, and what reaches the centre.

Per run group and ``PopulationDiversity`` metric: per seed and pooled means with t intervals, and
each ES method minus the permuted control, "higher" or "lower" only when the intervals over probes
and over seeds both exclude 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from es_lightning.report.readers import read_series
from es_lightning.report.stats import t_quantile
from es_lightning.report.tables import interval_cell, table

Dirs = dict[int, Path]
LEVEL = 0.95
"""The two-sided level of every interval of the section."""

METRICS: dict[str, str] = {
    "js": "JS divergence (bits)",
    "js_excess": "JS over the σ = 0 copies (bits)",
    "gap": "P_pop − P_same",
    "gap_excess": "P_pop − P_same over the copies'",
    "alignment_cov": "alignment cov(z, p)",
    "transfer_kl": "transfer KL(B_w ‖ B_θ⁺) (bits)",
    "mixture_gain": "mixture's predicted gain",
    "centre_gain": "centre's measured gain",
    "transfer_margin": "transfer margin",
}
"""The reported metrics (``diversity/<name>`` in ``metrics.jsonl``) and their labels."""
SHOWN = ("js", "js_excess", "gap_excess", "alignment_cov", "transfer_kl", "transfer_margin")
"""The metrics of REPORT.md's tables (report.json has every one)."""
HEADLINE = ("js", "gap_excess", "alignment_cov", "transfer_margin")
"""The probe-set JS, the excess P_pop, the alignment and Proposition 1's transfer margin."""


def mean_interval(values: Sequence[float], level: float = LEVEL) -> dict[str, Any] | None:
    """``{mean, low, high, n}`` with the two-sided t interval; ``None`` for no values."""
    n = len(values)
    if n == 0:
        return None
    mean = sum(values) / n
    if n == 1:
        return {"mean": mean, "low": None, "high": None, "n": 1}
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile((1 + level) / 2, n - 1) * sd / math.sqrt(n)
    return {"mean": mean, "low": mean - half, "high": mean + half, "n": n}


def run_diversity(run_dir: Path) -> dict[str, dict[int, float]]:
    """``{metric: {step: value}}`` of one run's probes (empty when it logged none)."""
    series = read_series(run_dir)
    return {name: dict(series[f"diversity/{name}"]) for name in METRICS if series.get(f"diversity/{name}")}


def _group(runs: dict[int, dict[str, dict[int, float]]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in METRICS:
        per_seed = {seed: list(r[name].values()) for seed, r in runs.items() if r.get(name)}
        if not per_seed:
            continue
        out[name] = {
            "per_seed": {str(seed): mean_interval(v) for seed, v in per_seed.items()},
            "pooled": mean_interval([x for v in per_seed.values() for x in v]),
            "over_seeds": mean_interval([sum(v) / len(v) for v in per_seed.values()]),
        }
    return out


def _side(interval: dict[str, Any] | None) -> int:
    """+1 / −1 when the interval lies above / below 0, else 0."""
    if not interval or interval["low"] is None:
        return 0
    return 1 if interval["low"] > 0 else -1 if interval["high"] < 0 else 0


def reading(over_probes: dict[str, Any] | None, over_seeds: dict[str, Any] | None) -> str:
    """``higher`` / ``lower`` when both intervals exclude 0 on that side, else ``not resolved``."""
    probes, seeds = _side(over_probes), _side(over_seeds)
    if probes and probes == seeds:
        return "higher" if probes > 0 else "lower"
    if probes or seeds:
        return f"not resolved ({'higher' if (probes or seeds) > 0 else 'lower'} over {'probes' if probes else 'seeds'} only)"
    return "not resolved"


def _versus(
    method: dict[int, dict[str, dict[int, float]]], control: dict[int, dict[str, dict[int, float]]]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in METRICS:
        per_seed = {
            seed: [mine[step] - theirs[step] for step in sorted(set(mine) & set(theirs))]
            for seed in sorted(set(method) & set(control))
            if (mine := method[seed].get(name)) and (theirs := control[seed].get(name))
        }
        per_seed = {seed: d for seed, d in per_seed.items() if d}
        if not per_seed:
            continue
        probes = mean_interval([d for diffs in per_seed.values() for d in diffs])
        seeds = mean_interval([sum(d) / len(d) for d in per_seed.values()])
        out[name] = {"over_probes": probes, "over_seeds": seeds, "reading": reading(probes, seeds)}
    return out


def collect_diversity(
    methods: dict[str, Dirs], forgetting: dict[str, Dirs], control: str
) -> dict[str, Any] | None:
    """The ``diversity`` block (``None`` without probes)."""
    groups = {**methods, **{f"forgetting/{m}": d for m, d in forgetting.items()}}
    found: dict[str, dict[int, dict[str, dict[int, float]]]] = {}
    for name, dirs in groups.items():
        runs = {seed: r for seed, d in sorted(dirs.items()) if (r := run_diversity(d))}
        if runs:
            found[name] = runs
    if not found:
        return None
    versus = {
        m: _versus(runs, found[control])
        for m, runs in found.items()
        if m in methods and m != control and control in found
    }
    return {
        "level": LEVEL,
        "control": control if control in found else None,
        "groups": {name: _group(runs) for name, runs in found.items()},
        "versus_control": versus,
    }


def _cell(interval: dict[str, Any] | None, sign: bool = False) -> str:
    return interval_cell(interval, "mean", "+.4f" if sign else ".4f")


def _plain(method: str, control: str, name: str, groups: dict[str, Any], diff: dict[str, Any] | None) -> str:
    """One line saying whether ``method`` differs from ``control`` on metric ``name``."""
    if not diff:
        return f"- {METRICS[name]}: not measured on both."
    mine = (groups.get(method, {}).get(name) or {}).get("pooled")
    theirs = (groups.get(control, {}).get(name) or {}).get("pooled")
    verdict = diff["reading"]
    verdict = f"**{method} {verdict}**" if verdict in ("higher", "lower") else verdict
    probes, seeds = diff["over_probes"], diff["over_seeds"]
    return (
        f"- {METRICS[name]}: {method} {_cell(mine)}, {control} {_cell(theirs)}; difference "
        f"{_cell(probes, sign=True)} over {probes['n']} paired probes, {_cell(seeds, sign=True)} over "
        f"{seeds['n']} seeds: {verdict}."
    )


def diversity_section(report: dict[str, Any]) -> list[str]:
    """REPORT.md's "Population diversity" section (empty when no run probed its populations)."""
    block = report.get("diversity")
    if not block:
        return []
    groups, control, versus = block["groups"], block.get("control"), block.get("versus_control") or {}
    out = ["## Population diversity", ""]
    out.append(
        "On a probe set apart from the reward prompts, every k-th update (`PopulationDiversity`): how "
        "differently the members succeed (JS divergence of their success rates; P_pop − P_same, the "
        "chance that some member solves a prompt beyond what members at the mean rate would), each "
        "also as its excess over N σ = 0 copies of the centre; the alignment cov(z, p) of the "
        "update's weights with the members' probe success; and Proposition 1's transfer to the centre "
        "(KL of the updated centre from the reward-weighted mixture's prediction, bits, and the "
        "margin of the mixture's gain that reached the centre). Mean [95% t interval over probed "
        "updates, seeds pooled: each probe draws its own prompts, samples and population]; "
        "differences from the permuted control are paired by seed and update."
    )
    out.append("")
    head = ["runs", *(METRICS[m] for m in SHOWN)]
    body = [
        [name, *(_cell((g.get(m) or {}).get("pooled"), sign=True) for m in SHOWN)]
        for name, g in groups.items()
    ]
    out += [table(head, body), ""]
    if control is None or not versus:
        out += ["No permuted control probed its populations here: nothing to compare ES with.", ""]
    else:
        if "es" in versus:
            out += [f"ES against its permuted control (`{control}`):", ""]
            out += [_plain("es", control, m, groups, versus["es"].get(m)) for m in METRICS] + [""]
        rows = [
            [method, *(diffs.get(m, {}).get("reading", "–") for m in HEADLINE)]
            for method, diffs in versus.items()
        ]
        out += [f"Every ES method against `{control}` (both intervals in report.json):", ""]
        out += [table(["method", *(METRICS[m] for m in HEADLINE)], rows), ""]
    rows = []
    for name, g in groups.items():
        seeds = sorted({s for m in SHOWN for s in ((g.get(m) or {}).get("per_seed") or {})}, key=int)
        for seed in seeds:
            probes = max(((g.get(m) or {}).get("per_seed", {}).get(seed) or {}).get("n", 0) for m in SHOWN)
            cells = [_cell(((g.get(m) or {}).get("per_seed") or {}).get(seed), sign=True) for m in SHOWN]
            rows.append([name, seed, str(probes), *cells])
    out += ["Per seed (t interval over that run's probed updates):", ""]
    out += [table(["runs", "seed", "probes", *(METRICS[m] for m in SHOWN)], rows), ""]
    return out
