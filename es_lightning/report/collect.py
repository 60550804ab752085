"""From finished run folders to the report's numbers (JSON-ready; every Stat is mean/sd/n/values)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from es_lightning.report.config import ReportPlan
from es_lightning.report.outcomes import Outcomes, collect_outcomes, evaluation_outcomes, run_outcomes
from es_lightning.report.pareto import frontier_line, non_dominated
from es_lightning.report.readers import Series, pass_at_k, pick_task, read_after, read_before, read_series
from es_lightning.report.stats import paired_difference, stat, stat_json

Dirs = dict[int, Path]
"""``{seed: run folder}`` of the finished runs of one method or ablation value."""


def choose_task(plan: ReportPlan, dirs: dict[str, Dirs]) -> str | None:
    """The reported task: ``plan.task``, else the first task of the first final evaluation found."""
    for seeds in dirs.values():
        for run_dir in seeds.values():
            after = read_after(run_dir)
            if after:
                return pick_task(after, plan.task)
    return plan.task


def _starts(plan: ReportPlan, methods: dict[str, Dirs], own: Any, start: Any) -> dict[int, Any]:
    """``{seed: the base's numbers}``: ``own`` (the base run's), else ``start(run)`` of the first
    method run of the seed that evaluated the starting model (``None``: neither)."""
    found = {}
    for seed in plan.seeds:
        runs = [dirs[seed] for dirs in methods.values() if seed in dirs]
        found[seed] = own or next((x for d in runs if (x := start(d))), None)
    return found


def _curve(evaluation: dict[str, Any] | None, task: str | None) -> dict[int, float]:
    return pass_at_k((evaluation or {}).get(task)) if task else {}


def collect_evaluations(
    plan: ReportPlan, methods: dict[str, Dirs], base_dir: Path | None, task: str | None
) -> dict:
    """Pass@K of base and every method: per seed, mean ± sd, and the paired difference to base."""
    base_file = _curve(read_after(base_dir), task) if base_dir is not None else {}
    starts = _starts(plan, methods, base_file, lambda d: _curve(read_before(d), task))
    per_seed = {"base": {seed: curve for seed, curve in starts.items() if curve}}
    for method, dirs in methods.items():
        per_seed[method] = {s: c for s, d in sorted(dirs.items()) if (c := _curve(read_after(d), task))}
    rows: dict[str, Any] = {}
    differences: dict[str, Any] = {}
    for name, seeds in per_seed.items():
        ks = sorted({k for curve in seeds.values() for k in curve})
        column = {k: {s: c[k] for s, c in seeds.items() if k in c} for k in ks}
        rows[name] = {str(k): stat_json(stat(v)) for k, v in column.items()}
        if name != "base":
            base = {k: {s: c[k] for s, c in per_seed["base"].items() if k in c} for k in ks}
            differences[name] = {str(k): stat_json(paired_difference(column[k], base[k])) for k in ks}
    return {
        "task": task,
        "base_source": "runs/base (es-lightning evaluate)" if base_file else "eval/before.json of the runs",
        "per_seed": {
            n: {str(s): {str(k): v for k, v in c.items()} for s, c in d.items()} for n, d in per_seed.items()
        },
        "pass_at_k": rows,
        "difference_to_base": differences,
    }


def collect_pareto(plan: ReportPlan, evaluations: dict[str, Any]) -> dict[str, Any]:
    """Per ``k`` of ``pareto_ks``: the (Pass@1, Pass@k) points and which are non-dominated."""
    out = {}
    rows, per_seed = evaluations["pass_at_k"], evaluations["per_seed"]
    for k in plan.pareto_ks:
        points = {
            m: (r["1"]["mean"], r[str(k)]["mean"]) for m, r in rows.items() if r.get("1") and r.get(str(k))
        }
        if not points:
            continue
        single = {m: p for m, p in points.items() if m in plan.frontier_methods}
        by_seed: dict[str, list[int]] = {m: [] for m in points}
        for seed in plan.seeds:
            seed_points = {
                m: (c["1"], c[str(k)])
                for m in points
                if (c := per_seed.get(m, {}).get(str(seed))) and "1" in c and str(k) in c
            }
            for m in non_dominated(seed_points):
                by_seed[m].append(seed)
        seeds_with = {
            m: sum(1 for s in plan.seeds if str(k) in per_seed.get(m, {}).get(str(s), {})) for m in points
        }
        out[str(k)] = {
            "points": {m: list(p) for m, p in points.items()},
            "non_dominated": non_dominated(points),
            "frontier": non_dominated(single),
            "frontier_line": [list(p) for p in frontier_line(single)],
            "non_dominated_seeds": by_seed,
            "seeds": seeds_with,
        }
    return out


def _aggregate(series: dict[int, Series]) -> dict[str, list]:
    """Mean ± sd over seeds at every step some seed logged."""
    steps = sorted({step for points in series.values() for step, _ in points})
    lookup = {seed: dict(points) for seed, points in series.items()}
    rows = [stat([v[step] for v in lookup.values() if step in v]) for step in steps]
    return {"steps": steps, **{key: [getattr(r, key) for r in rows] for key in ("mean", "sd", "n")}}


_HELDOUT = re.compile(r"^heldout/([^/]+)/pass@(\d+)$")


def collect_curves(plan: ReportPlan, methods: dict[str, Dirs]) -> dict[str, Any]:
    """Entropy and held-out Pass@K curves of ``curves.methods`` (and the permuted control), and their first→last change."""
    entropy: dict[str, dict[str, Any]] = {}
    entropy_by_seed: dict[str, dict[str, Any]] = {}
    heldout: dict[str, dict[str, dict[str, Any]]] = {}
    change: dict[str, dict[str, Any]] = {}
    final: dict[str, dict[str, dict[str, Any]]] = {}
    prompts: dict[str, float] = {}  # held-out problems per task (the figures' sampling band)
    for method in plan.with_control(plan.curves.methods):
        runs = {seed: read_series(d) for seed, d in methods.get(method, {}).items()}
        keys = sorted({key for series in runs.values() for key in series})
        for key in keys:
            by_seed = {seed: s[key] for seed, s in runs.items() if s.get(key)}
            if key.startswith("entropy/") and key.count("/") == 1:
                task = key.split("/", 1)[1]
                entropy.setdefault(task, {})[method] = _aggregate(by_seed)
                entropy_by_seed.setdefault(task, {})[method] = {
                    str(seed): [[step, value] for step, value in points] for seed, points in by_seed.items()
                }
                delta = {seed: s[-1][1] - s[0][1] for seed, s in by_seed.items()}
                change.setdefault(task, {})[method] = stat_json(stat(delta))
            elif key.startswith("heldout/") and key.endswith("/n_prompts") and by_seed:
                prompts.setdefault(key.split("/")[1], next(iter(by_seed.values()))[0][1])
            elif (match := _HELDOUT.match(key)) and int(match.group(2)) in plan.curves.heldout_ks:
                task, k = match.group(1), match.group(2)
                heldout.setdefault(task, {}).setdefault(k, {})[method] = _aggregate(by_seed)
                last = {seed: s[-1][1] for seed, s in by_seed.items()}
                final.setdefault(task, {}).setdefault(k, {})[method] = stat_json(stat(last))
    return {
        "entropy": entropy,
        "entropy_change": change,
        "entropy_by_seed": entropy_by_seed,
        "heldout": heldout,
        "heldout_final": final,
        "heldout_prompts": prompts,
    }


def _final_reward(series: dict[str, Series], window: int) -> float | None:
    rewards = series.get("train/reward_mean")
    return sum(v for _, v in rewards[-window:]) / len(rewards[-window:]) if rewards else None


def collect_ablations(
    plan: ReportPlan, ablations: dict[str, dict[str, Dirs]], task: str | None, ks: list[int]
) -> dict[str, Any]:
    """Per ablation and label: final reward, Pass@K and κ_pair over seeds, with the paper's value."""
    out: dict[str, Any] = {}
    for name, ablation in plan.ablations.items():
        rows = {}
        for label in ablation.runs(plan.quick):
            dirs = ablations.get(name, {}).get(label, {})
            series = {seed: read_series(d) for seed, d in dirs.items()}
            curves = {seed: _curve(read_after(d), task) for seed, d in dirs.items()}
            reward = {
                s: r for s, v in series.items() if (r := _final_reward(v, plan.reward_window)) is not None
            }
            kappa_updates = {
                s: [x for _, x in v["es/kappa_pair"]] for s, v in series.items() if v.get("es/kappa_pair")
            }
            kappa = {s: sum(xs) / len(xs) for s, xs in kappa_updates.items()}
            row = {
                "runs": len(dirs),
                "final_reward": stat_json(stat(reward)),
                "kappa_pair": stat_json(stat(kappa)),
                "kappa_pair_updates": {str(s): xs for s, xs in sorted(kappa_updates.items())} or None,
            }
            for k in ks:
                row[f"pass@{k}"] = stat_json(stat({s: c[k] for s, c in curves.items() if k in c}))
            row["reference"] = ablation.reference.get(label)
            rows[label] = row
        out[name] = {"parameter": ablation.parameter, "recipe": ablation.recipe, "rows": rows}
    return out


def collect_outcome_block(
    plan: ReportPlan,
    methods: dict[str, Dirs],
    base_dir: Path | None,
    task: str | None,
    points: dict[str, dict[int, Outcomes | None]] | None = None,
) -> dict[str, Any] | None:
    """The ``outcomes`` block: base, every method's final evaluation, then the trajectory ``points``."""
    if task is None:
        return None
    own = evaluation_outcomes(base_dir / "eval", "after", task) if base_dir is not None else None
    found = {"base": _starts(plan, methods, own, lambda d: run_outcomes(d, "before", task))}
    for method, dirs in methods.items():
        found[method] = {seed: run_outcomes(d, "after", task) for seed, d in sorted(dirs.items())}
    found.update(points or {})
    return collect_outcomes(found, task)
