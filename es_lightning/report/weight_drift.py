"""Weight drift of each method: ``es-lightning analyze`` on the final checkpoints, then means over
seeds, with the bf16 view and the random-walk null beside the measured statistics."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from es_lightning.report.base_point import add_base_point
from es_lightning.report.config import ReportPlan, split_overrides
from es_lightning.report.readers import final_checkpoint, read_json, read_series, starting_model
from es_lightning.report.runs import logged_record
from es_lightning.report.stats import paired_ratio, stat, stat_json


def analysis_file(plan: ReportPlan, method: str, seed: int) -> Path:
    return plan.analysis_dir / method / f"seed{seed}.json"


def _wants_curve(plan: ReportPlan, method: str) -> bool:
    """Whether ``method``'s analyses evaluate thresholded exports (the sparsity curve)."""
    drift = plan.drift
    wanted = method in drift.sparsity_curve_methods and bool(drift.export_thresholded and drift.evaluate)
    return wanted and (not plan.quick or drift.quick_sparsity_curve)


def analyze_command(plan: ReportPlan, run_dir: Path, output: Path, curve: bool) -> list[str] | str:
    """The ``es-lightning analyze`` command for one run, or why there is none."""
    checkpoint = final_checkpoint(run_dir)
    base = plan.drift.base_model or starting_model(run_dir)
    if checkpoint is None:
        return f"no checkpoint in {run_dir}"
    if base is None:
        return f"no starting model (module.model in {run_dir}/config.yaml; or set drift.base_model)"
    argv = [sys.executable, "-m", "es_lightning", "analyze", "--base", base, "--checkpoint", str(checkpoint)]
    argv += ["--taus", ",".join(f"{t:g}" for t in plan.drift.taus), "--top_k", str(plan.drift.top_k)]
    if curve:
        argv += ["--export_thresholded", ",".join(f"{t:g}" for t in plan.drift.export_thresholded)]
        argv += ["--evaluate", str(plan.drift.evaluate)]
    return [*argv, "--output", str(output), *split_overrides(plan.drift.extra_args)]


def run_analyses(
    plan: ReportPlan, finished: dict[str, dict[int, Path]], launch: bool
) -> list[dict[str, Any]]:
    """Analyse each finished run of ``drift.methods``; one record per analysis."""
    records = []
    for method in plan.with_control(plan.drift.methods) if plan.drift.enabled else []:
        for seed, run_dir in sorted(finished.get(method, {}).items()):
            out, curve = analysis_file(plan, method, seed), _wants_curve(plan, method)
            name, data = f"analyze/{method}/seed{seed}", read_json(out)
            if isinstance(data, dict) and (not curve or "sparsity_curve_base" in data):
                records.append({"name": name, "status": "reused"})
                continue
            if isinstance(data, dict) and "sparsity_curve" in data and final_checkpoint(run_dir) is None:
                records.append(add_base_point(plan, name, out, data, launch))  # only the base is missing
                continue
            argv = analyze_command(plan, run_dir, out, curve)
            if isinstance(argv, str) or not launch:
                status, error = ("failed", argv) if isinstance(argv, str) else ("missing", "not run")
                records.append({"name": name, "status": status, "error": error})
                continue
            print(f"[report] analysing {name}", flush=True)
            out.parent.mkdir(parents=True, exist_ok=True)
            records.append(
                logged_record(
                    name, argv, out.with_suffix(".log"), lambda out=out: isinstance(read_json(out), dict)
                )
            )
    return records


def _tau_keyed(plan: ReportPlan, sparsity: dict[str, Any] | None) -> dict[str, Any]:
    """An analysis' ``{τ key: s_τ}`` (keys ``"0.0015"``, ``"1.5e-3"``) keyed by ``f"{tau:g}"`` of the
    configured τ, so that seeds line up; keys that are not numbers are left out."""
    out = {}
    for key, share in (sparsity or {}).items():
        try:
            value = float(key)
        except ValueError:
            continue
        tau = next((t for t in plan.drift.taus if abs(t - value) <= 1e-9 * max(1.0, abs(t))), value)
        out[f"{tau:g}"] = share
    return out


def _by_seed(files: dict[int, dict[str, Any]], get: Any) -> dict[int, float]:
    """``{seed: get(analysis)}`` for the seeds where it is a number."""
    return {s: float(v) for s, d in files.items() if isinstance(v := get(d), int | float)}


def _per_key(files: dict[int, dict[str, Any]], field: str, missing: float | None = None) -> dict[str, Any]:
    """``{key: Stat over seeds}`` of a ``{key: number}`` field (``missing`` for a seed without the key)."""
    keys = sorted({k for d in files.values() for k in d.get(field, {})})
    return {
        k: stat_json(stat(_by_seed(files, lambda d, k=k: d.get(field, {}).get(k, missing)))) for k in keys
    }


def _view(plan: ReportPlan, files: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """rel-L2 and s_τ over seeds of one view (``bf16``) or of the random-walk null."""
    sparsity = {s: _tau_keyed(plan, d.get("sparsity")) for s, d in files.items()}
    return {
        "rel_l2": stat_json(stat(_by_seed(files, lambda d: d.get("rel_l2")))),
        "sparsity": _per_key({s: {"sparsity": v} for s, v in sparsity.items()}, "sparsity"),
    }


def _null_reason(files: dict[int, dict[str, Any]]) -> str | None:
    """Why the random-walk null is absent: analyze's own reason, or that it wrote none."""
    for data in files.values():
        null = data.get("null")
        if isinstance(null, dict) and not null.get("modelled"):
            return str(null.get("reason") or "not modelled")
    if not any(isinstance(d.get("null"), dict) for d in files.values()):
        return "this analysis has no random-walk null"
    return None


def kind_shares(files: dict[int, dict[str, Any]]) -> dict[str, float] | None:
    """Each layer kind's share of the parameters (from analyze's null top-k enrichment)."""
    for data in files.values():
        enrichment = (data.get("null") or {}).get("top_k_enrichment")
        if isinstance(enrichment, dict) and enrichment:
            return {kind: float(e["share"]) for kind, e in enrichment.items() if "share" in e}
    return None


def _method_drift(plan: ReportPlan, files: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """One method's drift over seeds: rel-L2 (overall and by kind), s_τ, top-k kinds, the curve."""
    for data in files.values():
        data["sparsity"] = _tau_keyed(plan, data.get("sparsity"))
    curve: dict[str, dict[str, dict[int, float]]] = {}  # {τ: {metric: {seed: value}}}
    for seed, data in files.items():
        for point in data.get("sparsity_curve", []):
            for key, value in point.items():
                if key != "tau" and isinstance(value, int | float):
                    curve.setdefault(f"{float(point['tau']):g}", {}).setdefault(key, {})[seed] = float(value)
    base: dict[str, dict[int, float]] = {}  # the base on the curve's engine: {metric: {seed: value}}
    for seed, data in files.items():
        for key, value in (data.get("sparsity_curve_base") or {}).items():
            if key != "tau" and isinstance(value, int | float) and not isinstance(value, bool):
                base.setdefault(key, {})[seed] = float(value)
    tops = {
        str(s): max(d["top_k_by_kind"], key=d["top_k_by_kind"].get)
        for s, d in files.items()
        if d.get("top_k_by_kind")
    }
    bf16 = {s: d["bf16"] for s, d in files.items() if isinstance(d.get("bf16"), dict)}
    null = {
        s: d["null"]
        for s, d in files.items()
        if isinstance(d.get("null"), dict) and d["null"].get("modelled")
    }
    return {
        "source": "analyze",
        "bf16": _view(plan, bf16) if bf16 else None,
        "null": {**_view(plan, null), "top_k_by_kind": _per_key(null, "top_k_by_kind")} if null else None,
        "null_reason": _null_reason(files),
        "rel_l2": stat_json(stat(_by_seed(files, lambda d: d.get("rel_l2")))),
        "rel_l2_by_kind": _per_key(files, "rel_l2_by_kind"),
        "sparsity": dict(sorted(_per_key(files, "sparsity").items(), key=lambda item: float(item[0]))),
        "top_k_by_kind": _per_key(files, "top_k_by_kind", missing=0),
        "top_kind_by_seed": dict(sorted(tops.items())),
        "sparsity_curve": {
            tau: {key: stat_json(stat(values)) for key, values in metrics.items()}
            for tau, metrics in sorted(curve.items(), key=lambda item: float(item[0]))
        },
        "sparsity_curve_base": {key: stat_json(stat(values)) for key, values in base.items()} or None,
    }


def collect_drift(plan: ReportPlan, finished: dict[str, dict[int, Path]]) -> dict[str, Any]:
    """``{"methods": {method: drift numbers}, "ratio": ...}`` from the analyses or the logs."""
    methods: dict[str, Any] = {}
    rel: dict[str, dict[int, float]] = {}
    shares: dict[str, float] | None = None
    for method in plan.with_control(plan.drift.methods) if plan.drift.enabled else []:
        seeds = finished.get(method, {})
        files = {s: d for s in seeds if isinstance(d := read_json(analysis_file(plan, method, s)), dict)}
        if files:
            shares = shares or kind_shares(files)
            methods[method] = _method_drift(plan, files)
            rel[method] = _by_seed(files, lambda d: d.get("rel_l2"))
            continue
        logged = {
            s: series[-1][1] for s, d in seeds.items() if (series := read_series(d).get("drift/rel_l2"))
        }
        if logged:
            methods[method] = {"source": "metrics.jsonl", "rel_l2": stat_json(stat(logged))}
            rel[method] = logged
    ratio = None
    if len(plan.drift.ratio) == 2 and all(m in rel for m in plan.drift.ratio):
        a, b = plan.drift.ratio
        ratio = {"numerator": a, "denominator": b, "value": stat_json(paired_ratio(rel[a], rel[b]))}
    taus = [f"{t:g}" for t in plan.drift.taus]
    return {"methods": methods, "ratio": ratio, "taus": taus, "kind_share": shares}
