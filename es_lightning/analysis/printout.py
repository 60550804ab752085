"""The printout of ``es-lightning analyze``: one row per model and view, rel-L2 by kind, the bf16
rounding in the top-k, and the measured statistics beside the random-walk null's."""

from __future__ import annotations

from typing import Any

from es_lightning.analysis.bf16_grid import rounding_line
from es_lightning.analysis.kinds import KINDS


def pad_columns(rows: list[list[str]], left: int = 1, last_left: bool = False) -> str:
    """Columns padded to their widest cell, text left-aligned and numbers right-aligned."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [
            cell.ljust(width) if i < left or (last_left and i == len(row) - 1) else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths))
        ]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _number(value: float | None, spec: str = ".4g") -> str:
    return "n/a" if value is None else format(value, spec)


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _kinds(counts: dict[str, int]) -> str:
    ranked = sorted(((n, k) for k, n in counts.items() if n), key=lambda item: (-item[0], item[1]))
    return ", ".join(f"{k} {n}" for n, k in ranked) or "-"


def _views(result: dict[str, Any], label: str) -> list[tuple[str, str, dict[str, Any]]]:
    stored = f"stored ({result.get('stored_as', 'as stored')})"
    views = [(label, stored, result)]
    if "bf16" in result:
        views.append((label, "bf16", result["bf16"]))
    return views


def format_analysis(result: dict[str, Any]) -> str:
    """The tables for an ``analyze`` result (the dict written to OUT.json)."""
    views = _views(result, "checkpoint")
    if "compare" in result:
        views += _views(result["compare"], "compare")
    taus = list(result.get("sparsity", {}))
    top_k = len(result.get("top_k", []))
    header = ["model", "view", "rel_l2", "nonzero", *(f"s({t})" for t in taus), f"top-{top_k} by kind"]
    rows = [header] + [
        [
            model,
            view,
            _number(data["rel_l2"]),
            f"{data['nonzero']:,}",
            *(_percent(data["sparsity"].get(t)) for t in taus),
            _kinds(data["top_k_by_kind"]),
        ]
        for model, view, data in views
    ]
    out = [
        f"base:       {result.get('base')} ({result.get('base_stored_as', 'as stored')})",
        f"checkpoint: {result.get('checkpoint')} ({result.get('stored_as', 'as stored')})",
    ]
    if "compare" in result:
        out.append(
            f"compare:    {result['compare'].get('checkpoint')} ({result['compare'].get('stored_as')})"
        )
    out += ["", pad_columns(rows, left=2, last_left=True), ""]
    if "rel_l2_ratio" in result:
        bf16 = result.get("bf16", {}).get("rel_l2_ratio")
        out.append(
            f"rel_l2 ratio checkpoint/compare: {_number(result['rel_l2_ratio'], '.1f')}x (stored), "
            f"{_number(bf16, '.1f')}x (bf16)"
        )
        out.append("")
    kinds = [k for k in KINDS if any(k in data["rel_l2_by_kind"] for _, _, data in views)]
    by_kind = [["rel_l2 by kind", *(f"{model} {view.split(' ')[0]}" for model, view, _ in views)]]
    by_kind += [[k, *(_number(data["rel_l2_by_kind"].get(k)) for _, _, data in views)] for k in kinds]
    out.append(pad_columns(by_kind))
    flags = [rounding_line(f"{model} {view.split(' ')[0]}", data) for model, view, data in views]
    out += [line for line in flags if line is not None]
    for label, data in (("checkpoint", result), ("compare", result.get("compare"))):
        if data is not None and "null" in data:
            out += ["", format_null(data, label)]
    return "\n".join(out)


def format_null(data: dict[str, Any], label: str = "checkpoint") -> str:
    """One model's stored-view statistics beside the random-walk null's (or why there is none)."""
    null = data["null"]
    if not null.get("modelled"):
        return f"{label} against the random-walk null: {null.get('reason')}"
    head = [f"{label} against the random-walk null: v = {null['variance']:.4g} ({null['variance_source']})"]
    head += [
        f"  {w['normalization']}/{w['estimator']}: α = {w['learning_rate']:g}, N = {w['population_size']}, "
        f"T_applied = {w['applied_updates']}"
        for w in null.get("inputs", {}).get("walks", [])
    ]
    head += [f"  note: {n}" for n in null.get("inputs", {}).get("notes", [])]
    ratios = null["measured_over_null"]
    rows = [["statistic", "measured", "null", "measured/null"]]
    rows.append(
        ["rel_l2", _number(data["rel_l2"]), _number(null["rel_l2"]), _number(ratios["rel_l2"], ".3f")]
    )
    if "rel_l2_from_update_norms" in null:
        rows.append(["rel_l2 (logged step norms)", "", _number(null["rel_l2_from_update_norms"]), ""])
    for kind, value in null["rel_l2_by_kind"].items():
        ratio = _number(ratios["rel_l2_by_kind"][kind], ".3f")
        rows.append([f"rel_l2 {kind}", _number(data["rel_l2_by_kind"].get(kind)), _number(value), ratio])
    for tau, value in null["sparsity"].items():
        ratio = _number(ratios["sparsity"][tau], ".3f")
        rows.append([f"s({tau})", _percent(data["sparsity"].get(tau)), _percent(value), ratio])
    k = len(data.get("top_k", []))
    for kind, e in null["top_k_enrichment"].items():
        ci = e["ratio_ci"]
        ratio = "n/a" if e["ratio"] is None else f"{e['ratio']:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]"
        rows.append([f"top-{k} {kind}", str(e["observed"]), f"{e['expected']:.1f}", ratio])
    return "\n".join(head) + "\n" + pad_columns(rows)


def format_curve(curve: list[dict[str, Any]], base: dict[str, Any] | None = None) -> str:
    """The sparsity curve as a table, the base model last when given."""
    view = curve[0].get("view", "stored") if curve else "stored"

    def row(label: str, p: dict[str, Any]) -> list[str]:
        s_tau, pass1, greedy = (_percent(p.get(key)) for key in ("s_tau", "pass@1", "greedy"))
        return [label, s_tau, f"{p.get('reverted', 0):,}", pass1, greedy]

    rows = [["τ", f"s_τ ({view})", "reverted", "pass@1", "greedy"]]
    rows += [row(f"{p['tau']:g}", p) for p in curve]
    if base is not None:  # every update reverted: s_τ = 1
        rows.append(row("base", {**base, "s_tau": 1.0}))
    return "\nsparsity curve (Pass@1 of the thresholded checkpoints)\n" + pad_columns(rows)
