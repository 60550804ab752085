"""``REPORT.md``'s number sections: a seed cell is ``mean ± sd``, an interval cell
``estimate [low, high]`` at the report's level, ``–`` absent."""

from __future__ import annotations

from typing import Any

from es_lightning.report.claims.common import fmt_interval
from es_lightning.report.stats import fmt_number, fmt_stat

PCT = {"scale": 100.0, "spec": ".1f"}


def table(header: list[str], rows: list[list[str]]) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "/") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def interval_cell(
    block: dict[str, Any] | None, key: str, spec: str, low: str = "low", high: str = "high"
) -> str:
    """``estimate [low, high]`` of a block's fields (the estimate alone without both bounds), ``–`` absent."""
    if not block or block.get(key) is None:
        return "–"
    bounds = [block.get(low), block.get(high)]
    if any(b is None for b in bounds):
        return format(block[key], spec)
    return f"{format(block[key], spec)} [{format(bounds[0], spec)}, {format(bounds[1], spec)}]"


def figure(report: dict[str, Any], name: str) -> list[str]:
    """The figure's image link, or why it was not drawn."""
    if name in report.get("figures", {}):
        return [f"![{name}]({name})", ""]
    why = report.get("skipped_figures", {}).get(name)
    return [f"*`{name}` not drawn: {why}.*", ""] if why else []


def _n(row: dict[str, Any]) -> str:
    return str(max((v["n"] for v in row.values() if v), default=0))


def _level(report: dict[str, Any]) -> str:
    return f"{100 * (report['config'].get('verdicts') or {}).get('level', 0.95):g}%"


def pass_at_k(report: dict[str, Any]) -> list[str]:
    evaluations = report["evaluations"]
    rows = evaluations.get("pass_at_k") or {}
    present = {int(k) for r in rows.values() for k, v in r.items() if v}
    ks = [k for k in report["config"]["ks"] if k in present] or sorted(present)
    if not any(any(r.values()) for r in rows.values()):
        return ["## Pass@K", "", "No finished evaluation.", "", *figure(report, "pass_at_k.png")]
    out = [f"## Pass@K on `{evaluations['task']}`", ""]
    out.append(f"Starting model (`base`): {evaluations['base_source']}. Percent; mean ± sd over seeds.")
    out.append("")
    body = [[m, _n(r), *(fmt_stat(r.get(str(k)), **PCT) for k in ks)] for m, r in rows.items()]
    out += [table(["method", "seeds", *(f"pass@{k}" for k in ks)], body), ""]
    diff = evaluations.get("difference_to_base") or {}
    body = [[m, *(fmt_stat(d.get(str(k)), sign=True, **PCT) for k in ks)] for m, d in diff.items()]
    out += ["Difference to the starting model (points, paired by seed):", ""]
    out += [table(["method", *(f"Δ pass@{k}" for k in ks)], body), ""]
    out += _intervals(report)
    return out + figure(report, "pass_at_k.png")


def _intervals(report: dict[str, Any]) -> list[str]:
    intervals = report.get("intervals") or {}
    if not intervals:
        return ["No per-problem outcomes: no sampling intervals (every bootstrap verdict says so).", ""]
    wanted = [1, *report["config"]["pareto_ks"]]
    ks = [k for k in wanted if k in intervals["ks"]]
    out = [
        f"Pass@K and its difference to base with the one-sided {_level(report)} bounds of the paired "
        "bootstrap over problems, pooled over seeds (points):",
        "",
    ]
    body = []
    for method, by_k in intervals["pass_at_k"].items():
        if "@" in method:  # a trajectory point: in its own section
            continue
        diff = intervals["difference_to_base"].get(method, {})
        cells = [fmt_interval(by_k.get(str(k)), sign=False, **PCT) for k in ks]
        cells += [fmt_interval(diff.get(str(k)), **PCT) if method != "base" else "" for k in ks]
        body.append([method, *cells])
    header = ["method", *(f"pass@{k}" for k in ks), *(f"Δ pass@{k}" for k in ks)]
    return out + [table(header, body), ""]


def pareto(report: dict[str, Any]) -> list[str]:
    out = ["## Pareto: Pass@1 against Pass@K", ""]
    rows = report["evaluations"].get("pass_at_k") or {}
    for k, data in report.get("pareto", {}).items():
        body = []
        for m in data["points"]:
            nd = f"{len(data['non_dominated_seeds'][m])} of {data['seeds'][m]}"
            mark = "yes" if m in data["non_dominated"] else "no"
            frontier = "yes" if m in data["frontier"] else ""
            body.append([m, fmt_stat(rows[m]["1"], **PCT), fmt_stat(rows[m][k], **PCT), mark, nd, frontier])
        header = ["method", "pass@1", f"pass@{k}", "non-dominated (mean)", "non-dominated seeds"]
        out += [f"### Pass@1 vs Pass@{k}", "", table([*header, "base/ES/GRPO frontier"], body), ""]
    out += [
        "Non-domination among these end points is descriptive only: a point between base and GRPO on "
        "both axes is non-dominated by construction. The sequential runs are judged on GRPO's "
        "trajectory (below).",
        "",
    ]
    for k in report["config"]["pareto_ks"]:
        out += figure(report, f"pareto_pass1_pass{k}.png")
    return out


def trajectory(report: dict[str, Any]) -> list[str]:
    path = report.get("trajectory")
    out = ["## GRPO's trajectory", ""]
    if not path:
        why = "No trajectory (set `trajectory: {method: grpo, every: k}`): the claims judged on it say"
        return [*out, f"{why} insufficient data.", ""]
    intervals = (report.get("intervals") or {}).get("pass_at_k") or {}
    evaluated = (report.get("intervals") or {}).get("ks", []) if intervals else []
    ks = [k for k in [1, *report["config"]["pareto_ks"]] if k in evaluated]
    when = f"every {path['every']} updates"
    if path.get("at_steps") or not path.get("every"):
        when = "at updates " + ", ".join(str(s) for s in path["steps"][1:-1])
    out.append(
        f"`{path['method']}` evaluated {when} with the final protocol (step 0: base). "
        f"Pass@K pooled over seeds, one-sided {_level(report)} bootstrap bounds (percent):"
    )
    out.append("")
    body = []
    for step, point in zip(path["steps"], path["points"]):
        cells = [fmt_interval((intervals.get(point) or {}).get(str(k)), sign=False, **PCT) for k in ks]
        body.append([str(step), point, *cells])
    return out + [table(["update", "point", *(f"pass@{k}" for k in ks)], body), ""]


def curves(report: dict[str, Any]) -> list[str]:
    data = report.get("curves") or {}
    out = ["## Training curves", ""]
    body = [
        [t, m, fmt_stat(s, spec=".3f", sign=True)]
        for t, ms in data.get("entropy_change", {}).items()
        for m, s in ms.items()
    ]
    if body:
        header = ["task", "method", "Δ entropy"]
        out += ["Token entropy, last − first logged value:", "", table(header, body), ""]
    body = [
        [t, k, m, fmt_stat(s, **PCT)]
        for t, ks in data.get("heldout_final", {}).items()
        for k, ms in ks.items()
        for m, s in ms.items()
    ]
    if body:
        header = ["task", "k", "method", "pass@k"]
        out += ["Held-out Pass@k at the last logged step:", "", table(header, body), ""]
    if len(out) == 2:
        out += ["No run logged entropy or held-out curves.", ""]
    return out + figure(report, "entropy.png") + figure(report, "heldout.png")


def drift(report: dict[str, Any]) -> list[str]:
    data = report.get("drift") or {}
    methods = data.get("methods") or {}
    out = ["## Drift from the starting model", ""]
    if not methods:
        out += ["No drift measured (no `es-lightning analyze` output and no `drift/rel_l2` logged).", ""]
        return out + figure(report, "drift.png")
    taus = data.get("taus") or []

    def row(m: str, view: dict[str, Any], label: str, source: str) -> list[str]:
        sparsity = view.get("sparsity") or {}
        cells = [fmt_stat(view.get("rel_l2"), spec=".3g"), *(fmt_stat(sparsity.get(t), **PCT) for t in taus)]
        return [m, label, source, *cells]

    body = []
    for m, d in methods.items():
        body.append(row(m, d, "stored", d["source"]))
        if d.get("bf16"):
            body.append(row(m, d["bf16"], "bf16", "analyze"))
        if d.get("null"):
            body.append(row(m, d["null"], "random-walk null", "closed form"))
        elif d["source"] == "analyze":
            reason = d.get("null_reason") or "not written"
            body.append([m, "random-walk null", reason, "–", *("–" for _ in taus)])
    out += [table(["method", "view", "source", "rel-L2", *(f"s_τ {t} (%)" for t in taus)], body), ""]
    out += [
        "`stored`: the checkpoint's weights as stored (fp32 master); `bf16`: both sides rounded to "
        "bfloat16 (the weights a bf16 engine serves); `random-walk null`: what ES's α, N and applied "
        "updates give with rewards that carry no information (`es-lightning analyze`).",
        "",
    ]
    ratio = data.get("ratio")
    if ratio:
        out += [
            f"rel-L2 ratio {ratio['numerator']} / {ratio['denominator']} (paired by seed): {fmt_stat(ratio['value'], spec='.1f')}",
            "",
        ]
    out += _kinds(data, methods) + _curve(report, methods)
    return out + figure(report, "drift.png")


def _kinds(data: dict[str, Any], methods: dict[str, Any]) -> list[str]:
    kinds = sorted({k for d in methods.values() for k in d.get("top_k_by_kind", {})})
    if not kinds:
        return []
    body = []
    for m, d in methods.items():
        if d.get("top_k_by_kind"):
            body.append([m, *(fmt_stat(d["top_k_by_kind"].get(k)) for k in kinds)])
            null = (d.get("null") or {}).get("top_k_by_kind")
            if null:
                body.append([f"{m} (null: parameter share)", *(fmt_stat(null.get(k)) for k in kinds)])
    shares = data.get("kind_share") or {}
    if shares:
        body.append(
            ["parameter share (%)", *(fmt_number(shares[k], 100) if k in shares else "–" for k in kinds)]
        )
    return ["Top-k largest updates by layer kind (tensors):", "", table(["method", *kinds], body), ""]


def _curve(report: dict[str, Any], methods: dict[str, Any]) -> list[str]:
    out = []
    for m, d in methods.items():
        curve = d.get("sparsity_curve") or {}
        if curve:
            present = {k for v in curve.values() for k in v}
            wanted = ["s_tau", *(f"pass@{k}" for k in report["config"]["ks"]), "greedy"]
            metrics = [k for k in wanted if k in present]  # the evaluation's own counts stay in report.json
            body = [[t, *(fmt_stat(v.get(k), **PCT) for k in metrics)] for t, v in curve.items()]
            if d.get("sparsity_curve_base"):  # every update reverted, scored as the exports
                body.append(["base", *(fmt_stat(d["sparsity_curve_base"].get(k), **PCT) for k in metrics)])
            out += [f"Thresholded exports of `{m}` (updates with |Δ| ≤ τ zeroed), percent:", ""]
            out += [table(["τ", *metrics], body), ""]
    return out


def ablations(report: dict[str, Any]) -> list[str]:
    out = ["## Ablations", ""]
    for name, data in report.get("ablations", {}).items():
        rows = data["rows"]
        ks = sorted({m for r in rows.values() for m in r if m.startswith("pass@")}, key=lambda m: int(m[5:]))
        body = []
        for label, r in rows.items():
            ref = "–" if r.get("reference") is None else f"{r['reference']:.4f}"
            cells = [fmt_stat(r.get(k), **PCT) for k in ks]
            reward = fmt_stat(r.get("final_reward"), spec=".3f")
            kappa = fmt_stat(r.get("kappa_pair"), spec=".4f")
            body.append([label, str(r["runs"]), reward, *cells, kappa, ref])
        header = [data["parameter"] or "variant", "runs", "final reward", *(f"{k} (%)" for k in ks)]
        header += ["κ_pair", "paper κ_pair"]
        out += [f"### {name}", "", f"Recipe `{data['recipe']}`.", "", table(header, body), ""]
    if not report.get("ablations"):
        out += ["No ablations configured.", ""]
    return out + figure(report, "ablations.png")
