"""``REPORT.md``: the collected numbers as tables, the figures, and the honest reading.

Rendered only from the report dict that is also written as ``report.json``, so every number shown
is in that file. Formats: Pass@K, s_τ and differences of them in percent (points) with one
decimal; rel-L2 with three significant digits; rewards and entropies with three decimals; κ_pair
with four. A cell is ``mean ± sd`` over seeds, or just the value for one seed; ``–`` is absent.
"""

from __future__ import annotations

from typing import Any

from es_lightning.report.claims import NOT_MEASURED, ONE_SEED, UNRESOLVED
from es_lightning.report.stats import fmt_stat

PCT = {"scale": 100.0, "spec": ".1f"}


def table(header: list[str], rows: list[list[str]]) -> str:
    """A GitHub-flavoured Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "/") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _n(row: dict[str, Any]) -> str:
    return str(max((v["n"] for v in row.values() if v), default=0))


def _figure(report: dict[str, Any], name: str) -> list[str]:
    """The figure's image link, or why it was not drawn."""
    if name in report["figures"]:
        return [f"![{name}]({name})", ""]
    why = report["skipped_figures"].get(name)
    return [f"*`{name}` not drawn: {why}.*", ""] if why else []


def _runs(report: dict[str, Any]) -> list[str]:
    runs = report["runs"]
    rows = [
        [r["name"], r["status"], f"{r.get('seconds') or 0:.0f}", (r.get("error") or "").split("\n")[0]]
        for r in runs
    ]
    out = ["## Runs", "", table(["run", "status", "seconds", "note"], rows), ""]
    budgets = report.get("budgets", {})
    if budgets:
        out.append(
            "Updates per method: "
            + ", ".join(f"{m} {u if u is not None else '?'}" for m, u in budgets.items())
            + "."
        )
        if len({u for u in budgets.values() if u is not None}) > 1:
            out.append("**The methods did not get the same number of updates.**")
        out.append("")
    failures = report["failures"]
    if failures:
        out += ["### Failures", ""]
        for f in failures:
            log = f" (log: `{f['log']}`)" if f.get("log") else ""
            out.append(f"- `{f['name']}` {f['status']}: {(f.get('error') or '').splitlines()[0]}{log}")
        out.append("")
    return out


def _pass_at_k(report: dict[str, Any]) -> list[str]:
    evaluations = report["evaluations"]
    rows = evaluations["pass_at_k"]
    present = {int(k) for r in rows.values() for k, v in r.items() if v}
    ks = [k for k in report["config"]["ks"] if k in present] or sorted(present)
    if not any(any(r.values()) for r in rows.values()):
        return ["## Pass@K", "", "No finished evaluation.", "", *_figure(report, "pass_at_k.png")]
    out = [f"## Pass@K on `{evaluations['task']}`", ""]
    out.append(f"Starting model (`base`): {evaluations['base_source']}. Percent; mean ± sd over seeds.")
    out.append("")
    body = [[m, _n(r), *(fmt_stat(r.get(str(k)), **PCT) for k in ks)] for m, r in rows.items()]
    out += [table(["method", "seeds", *(f"pass@{k}" for k in ks)], body), ""]
    diff = evaluations["difference_to_base"]
    body = [[m, *(fmt_stat(d.get(str(k)), sign=True, **PCT) for k in ks)] for m, d in diff.items()]
    out += ["Difference to the starting model (points, paired by seed):", ""]
    out += [table(["method", *(f"Δ pass@{k}" for k in ks)], body), ""]
    return out + _figure(report, "pass_at_k.png")


def _pareto(report: dict[str, Any]) -> list[str]:
    out = ["## Pareto: Pass@1 against Pass@K", ""]
    rows = report["evaluations"]["pass_at_k"]
    for k, data in report["pareto"].items():
        body = []
        for m in data["points"]:
            nd = f"{len(data['non_dominated_seeds'][m])} of {data['seeds'][m]}"
            mark = "yes" if m in data["non_dominated"] else "no"
            frontier = "yes" if m in data["frontier"] else ""
            body.append([m, fmt_stat(rows[m]["1"], **PCT), fmt_stat(rows[m][k], **PCT), mark, nd, frontier])
        header = [
            "method",
            "pass@1",
            f"pass@{k}",
            "non-dominated (mean)",
            "non-dominated seeds",
            "base/ES/GRPO frontier",
        ]
        out += [f"### Pass@1 vs Pass@{k}", "", table(header, body), ""]
    for k in report["config"]["pareto_ks"]:
        out += _figure(report, f"pareto_pass1_pass{k}.png")
    return out


def _curves(report: dict[str, Any]) -> list[str]:
    curves = report["curves"]
    out = ["## Training curves", ""]
    body = [
        [t, m, fmt_stat(s, spec=".3f", sign=True)]
        for t, ms in curves["entropy_change"].items()
        for m, s in ms.items()
    ]
    if body:
        out += [
            "Token entropy, last − first logged value:",
            "",
            table(["task", "method", "Δ entropy"], body),
            "",
        ]
    body = [
        [t, k, m, fmt_stat(s, **PCT)]
        for t, ks in curves["heldout_final"].items()
        for k, ms in ks.items()
        for m, s in ms.items()
    ]
    if body:
        out += [
            "Held-out Pass@k at the last logged step:",
            "",
            table(["task", "k", "method", "pass@k"], body),
            "",
        ]
    if len(out) == 2:
        out += ["No run logged entropy or held-out curves.", ""]
    return out + _figure(report, "entropy.png") + _figure(report, "heldout.png")


def _drift(report: dict[str, Any]) -> list[str]:
    drift = report["drift"]
    methods = drift["methods"]
    out = ["## Drift from the starting model", ""]
    if not methods:
        out += ["No drift measured (no `es-lightning analyze` output and no `drift/rel_l2` logged).", ""]
        return out + _figure(report, "drift.png")
    taus = drift["taus"]
    body = [
        [
            m,
            d["source"],
            fmt_stat(d.get("rel_l2"), spec=".3g"),
            *(fmt_stat((d.get("sparsity") or {}).get(t), **PCT) for t in taus),
        ]
        for m, d in methods.items()
    ]
    out += [table(["method", "source", "rel-L2", *(f"s_τ {t} (%)" for t in taus)], body), ""]
    ratio = drift.get("ratio")
    if ratio:
        out += [
            f"rel-L2 ratio {ratio['numerator']} / {ratio['denominator']} (paired by seed): {fmt_stat(ratio['value'], spec='.1f')}",
            "",
        ]
    kinds = sorted({k for d in methods.values() for k in d.get("top_k_by_kind", {})})
    if kinds:
        body = [
            [m, *(fmt_stat(d["top_k_by_kind"].get(k)) for k in kinds)]
            for m, d in methods.items()
            if d.get("top_k_by_kind")
        ]
        out += ["Top-k largest updates by layer kind (tensors):", "", table(["method", *kinds], body), ""]
    for m, d in methods.items():
        curve = d.get("sparsity_curve") or {}
        if curve:
            present = {k for v in curve.values() for k in v}
            wanted = ["s_tau", *(f"pass@{k}" for k in report["config"]["ks"]), "greedy"]
            metrics = [k for k in wanted if k in present]  # the evaluation's own counts stay in report.json
            body = [[t, *(fmt_stat(v.get(k), **PCT) for k in metrics)] for t, v in curve.items()]
            out += [f"Thresholded exports of `{m}` (updates with |Δ| ≤ τ zeroed), percent:", ""]
            out += [table(["τ", *metrics], body), ""]
    return out + _figure(report, "drift.png")


def _ablations(report: dict[str, Any]) -> list[str]:
    out = ["## Ablations", ""]
    for name, data in report["ablations"].items():
        rows = data["rows"]
        ks = sorted({m for r in rows.values() for m in r if m.startswith("pass@")}, key=lambda m: int(m[5:]))
        body = []
        for label, r in rows.items():
            ref = "–" if r.get("reference") is None else f"{r['reference']:.4f}"
            cells = [fmt_stat(r.get(k), **PCT) for k in ks]
            body.append(
                [
                    label,
                    str(r["runs"]),
                    fmt_stat(r.get("final_reward"), spec=".3f"),
                    *cells,
                    fmt_stat(r.get("kappa_pair"), spec=".4f"),
                    ref,
                ]
            )
        header = [
            data["parameter"] or "variant",
            "runs",
            "final reward",
            *(f"{k} (%)" for k in ks),
            "κ_pair",
            "paper κ_pair",
        ]
        out += [f"### {name}", "", f"Recipe `{data['recipe']}`.", "", table(header, body), ""]
    if not report["ablations"]:
        out += ["No ablations configured.", ""]
    return out + _figure(report, "ablations.png")


def _reading(report: dict[str, Any]) -> list[str]:
    claims, seeds = report["claims"], report["config"]["seeds"]
    out = ["## The honest reading", ""]
    out.append(
        f"{len(seeds)} seed{'s' if len(seeds) != 1 else ''} per method. A difference is the mean over seeds "
        "of the per-seed difference, ± its sample standard deviation; a claim counts as reproduced only when "
        "the difference exceeds that spread in the claimed direction, and with one seed nothing is resolved."
    )
    if report["failures"]:
        out.append(
            f"{len(report['failures'])} run(s) or analyses failed or were not run (see Runs); the claims "
            "that need them are marked not measured or rest on fewer seeds."
        )
    out.append("")
    for verdict in ("reproduced", "not reproduced", UNRESOLVED, ONE_SEED, NOT_MEASURED):
        names = [c["claim"] for c in claims if c["verdict"] == verdict]
        if names:
            out.append(f"- **{verdict[0].upper() + verdict[1:]}** ({len(names)}): {'; '.join(names)}.")
    body = [[c["claim"], c["paper"], c["measured"], f"**{c['verdict']}**"] for c in claims]
    return [*out, "", table(["claim", "paper", "measured here", "verdict"], body), ""]


def render(report: dict[str, Any]) -> str:
    """The whole ``REPORT.md``."""
    config = report["config"]
    out = ["# ES vs GRPO: reasoning coverage report", ""]
    if report.get("command"):
        out += [f"Command: `{report['command']}`", ""]
    methods = ", ".join(f"`{m}` ({r})" for m, r in config["methods"].items())
    out += [
        f"Methods: {methods}. Seeds: {config['seeds']}." + (" Quick mode." if config["quick"] else ""),
        "",
    ]
    out += _reading(report) + _runs(report) + _pass_at_k(report) + _pareto(report) + _curves(report)
    out += _drift(report) + _ablations(report)
    return "\n".join(out).rstrip() + "\n"
