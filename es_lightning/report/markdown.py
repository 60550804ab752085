"""``REPORT.md``: the honest reading first, then the runs, compute and every number behind it,
rendered only from the report dict written as ``report.json``."""

from __future__ import annotations

from typing import Any

from es_lightning.report.claims.common import fmt_interval, points
from es_lightning.report.claims.variants import NOT_IN_PAPER
from es_lightning.report.compute import FIELDS
from es_lightning.report.diversity import diversity_section
from es_lightning.report.signal import signal_section
from es_lightning.report.stats import fmt_stat
from es_lightning.report.tables import PCT, ablations, curves, drift, pareto, pass_at_k, table, trajectory
from es_lightning.report.verdicts import CATEGORIES, category

RULES = (
    "Every verdict reads two one-sided tests at {level} on the claim's evidence, and a claim passes only "
    "where both do: the t test over training seeds (each seed's statistic alone: it carries the seeds' "
    "spread) and the two-level bootstrap that resamples seeds and problems together (it carries the noise "
    "every seed shares, such as the starting model's one evaluation). Numbers measured once per run (drift, "
    "entropy, attribution shares) read the t test over seeds alone; one seed resolves nothing. A direction "
    "claim is reproduced when the test on its side rejects, not reproduced when the test on the other side "
    'does; a "keeps" claim is non-inferiority with its margin (Pass@K {pass_margin}, entropy '
    "{entropy_margin:g} nats); a matched-Pass@1 claim is reproduced above 0 and not reproduced below "
    "{primary_margin}. Within each family of claims (table below) the p-values are adjusted by Holm's "
    'step-down, so a family\'s chance of any false "reproduced" is at most {miss}. Claims about what ES '
    "does differently are judged only when ES learned (its premise below) and against its permuted-reward "
    "control, which takes the same random walk: drift, sparsity and attribution as ES's excess over it, "
    "coverage and entropy at matched Pass@1 on GRPO's measured trajectory. Claims whose data are absent say "
    "insufficient data."
)


COMPUTE_COLUMNS = {
    "updates": ("updates", ".0f"),
    "rollouts": ("rollouts", ".0f"),
    "generated_tokens": ("generated tokens", ".3g"),
    "train_seconds": ("training seconds", ".0f"),
    "wall_seconds": ("wall seconds", ".0f"),
    "peak_rss_mb": ("peak MiB", ".0f"),
}
"""Each compute field's column header and number format."""


def _preregistration(report: dict[str, Any]) -> list[str]:
    found = report.get("preregistration") or {}
    if not found:
        return []
    if found.get("status") == "pre-registered":
        line = (
            f"**Pre-registered.** This report's rules match those frozen in `{found['document']}` "
            f"(analysis code at commit `{found.get('commit')}`) before the study ran."
        )
    else:
        line = "**Not pre-registered**: " + "; ".join(found.get("differences") or ["unknown"]) + "."
    return [line, ""]


def _families(report: dict[str, Any]) -> list[str]:
    families = report.get("families") or {}
    rows = [[name, f["what"], str(f["tested"])] for name, f in families.items() if f["tested"]]
    if not rows:
        return []
    return ["Families (Holm within each):", "", table(["family", "claims", "tested"], rows), ""]


def _gain_split(report: dict[str, Any]) -> list[str]:
    split = report.get("gain_split")
    if not split:
        return []
    out = ["## Where the Pass@1 gain lies", ""]
    out.append(
        "Each method's per-problem Pass@1 change against the base, on the problems the base already solves "
        "greedily and on the others: a method that sharpens the base's distribution gains mostly on the "
        "former."
    )
    out.append("")
    header = ["method", "Δ Pass@1, base greedy right", "problems", "Δ Pass@1, base greedy wrong", "problems"]
    rows = []
    for m, r in split.items():
        solved, unsolved = (fmt_interval(r.get(side), **PCT) for side in ("solved", "unsolved"))
        rows.append([m, solved, str(r["n_solved"]), unsolved, str(r["n_unsolved"])])
    return [*out, table(header, rows), ""]


def _reading(report: dict[str, Any]) -> list[str]:
    claims, config = report["claims"], report["config"]
    verdicts = config.get("verdicts") or {}
    level = verdicts.get("level", 0.95)
    seeds = config["seeds"]
    out = ["## The honest reading", ""]
    out.append(
        f"{len(seeds)} seed{'s' if len(seeds) != 1 else ''} per method. "
        + RULES.format(
            level=f"{100 * level:g}%",
            miss=f"{100 * (1 - level):g}%",
            pass_margin=points(verdicts.get("pass_margin", 0.01)),
            entropy_margin=verdicts.get("entropy_margin", 0.005),
            primary_margin=points(verdicts.get("primary_margin", 0.02)),
        )
    )
    if report.get("failures"):
        out.append(
            f"{len(report['failures'])} run(s), analyses or evaluations failed or were not run (see Runs); "
            "the claims that need them say so or rest on fewer seeds."
        )
    out.append("")
    for name in CATEGORIES:
        names = [
            c["claim"] + (" (not in the paper)" if c["paper"] == NOT_IN_PAPER else "")
            for c in claims
            if category(c["verdict"]) == name
        ]
        if names:
            out.append(f"- **{name[0].upper() + name[1:]}** ({len(names)}): {'; '.join(names)}.")
    body = [[c["claim"], c["paper"], c["measured"], f"**{c['verdict']}**", _rule(c)] for c in claims]
    header = ["claim", "paper", "measured here", "verdict", "rule"]
    return [*out, "", *_families(report), table(header, body), ""]


def _rule(c: dict[str, Any]) -> str:
    """The claim's rule, with its family and p-values (raw and Holm-adjusted) when it was tested."""
    test = c.get("test")
    if not test:
        return c.get("rule", "")
    p = f"p = {test['p_reproduce']:.3g} (Holm {test.get('p_reproduce_holm', test['p_reproduce']):.3g})"
    return f"{c.get('rule', '')} [{test['family']}; {p}]"


def _premise(report: dict[str, Any]) -> list[str]:
    premise = report.get("premise") or {}
    numbers = premise.get("numbers") or {}
    control = (report["config"].get("verdicts") or {}).get("permuted_control", "es_permuted")
    out = ["## ES's premise", ""]
    out.append(
        "ES-relative claims (coverage, entropy, drift ratio, sparsity, attribution, functional sparsity) are "
        "judged only when ES's Pass@1 is resolved above the base's and above its permuted-reward control "
        f"(`{control}`: the same recipe with the rewards shuffled among the members). Verdict: "
        f"**{premise.get('verdict', 'not checked')}**."
    )
    out.append("")
    rows = [
        ["es − base Pass@1", fmt_interval(numbers.get("es_minus_base_pass1"), **PCT)],
        [f"es − {control} Pass@1", fmt_interval(numbers.get("es_minus_control_pass1"), **PCT)],
    ]
    return out + [table(["difference (points)", "estimate [one-sided bounds]"], rows), ""]


def _runs(report: dict[str, Any]) -> list[str]:
    runs = report.get("runs") or []
    out = ["## Runs", ""]
    if report.get("source"):
        out += [
            f"Judged again from `{report['source']['from_json']}` (nothing run); it was made by "
            f"`{report['source'].get('command')}`.",
            "",
        ]
    if runs:
        rows = [
            [r["name"], r["status"], f"{r.get('seconds') or 0:.0f}", (r.get("error") or "").split("\n")[0]]
            for r in runs
        ]
        out += [table(["run", "status", "seconds", "note"], rows), ""]
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
    failures = report.get("failures") or []
    if failures:
        out += ["### Failures", ""]
        for f in failures:
            log = f" (log: `{f['log']}`)" if f.get("log") else ""
            out.append(f"- `{f['name']}` {f['status']}: {(f.get('error') or '').splitlines()[0]}{log}")
        out.append("")
    return out


def _compute(report: dict[str, Any]) -> list[str]:
    compute = report.get("compute")
    out = ["### Compute per method", "", "What each method's results above cost:", ""]
    if not compute:
        return out + ["Not recorded (this report has no compute block).", ""]
    body = [
        [m, *(fmt_stat(c.get(f), spec=COMPUTE_COLUMNS[f][1]) if c.get(f) else "not recorded" for f in FIELDS)]
        for m, c in compute.items()
    ]
    out += [table(["method", *(COMPUTE_COLUMNS[f][0] for f in FIELDS)], body), ""]
    out += [
        "Rollouts, tokens and training seconds count the training updates only (evaluations and callbacks "
        "excluded); wall seconds and peak resident memory are of the whole run (engine start, evaluations "
        "and its engines included). Mean ± sd over seeds.",
        "",
    ]
    return out


def _forgetting(report: dict[str, Any]) -> list[str]:
    """REPORT.md's forgetting section: before, after and Δ per method, task and K."""
    block = report.get("forgetting")
    if not block:
        return []
    found = block.get("changes") or {}
    out = ["## Forgetting", ""]
    out.append(
        f"Each method post-trains on `{block['in_domain']}` only; `{block['out_of_domain']}` is the "
        "skill it can forget. Pass@K before → after training (pooled over seeds), and the change with "
        "its one-sided bounds (paired bootstrap over problems); the held-out task is judged only for "
        "a method whose in-domain Pass@1 rose."
    )
    out.append("")
    rows = []
    for method, tasks in found.items():
        for task, row in tasks.items():
            for k in block["ks"]:
                before, after = row.get(f"before@{k}"), row.get(f"after@{k}")
                if before is None or after is None:
                    rows.append([method, task, f"{k}", "–", "–", "–"])
                    continue
                rates = [f"{100 * found['estimate']:.1f}" for found in (before, after)]
                rows.append([method, task, f"{k}", *rates, fmt_interval(row.get(f"delta@{k}"), **PCT)])
    out += [table(["method", "task", "K", "before", "after", "Δ (points)"], rows), ""]
    return out


def render(report: dict[str, Any]) -> str:
    """The whole ``REPORT.md``."""
    config = report["config"]
    out = ["# ES vs GRPO: reasoning coverage report", "", *_preregistration(report)]
    if report.get("command"):
        out += [f"Command: `{report['command']}`", ""]
    methods = ", ".join(f"`{m}` ({r})" for m, r in config["methods"].items())
    quick = " Quick mode." if config["quick"] else ""
    out += [f"Methods: {methods}. Seeds: {config['seeds']}.{quick}", ""]
    for section in SECTIONS:
        out += section(report)
    return "\n".join(out).rstrip() + "\n"


SECTIONS = (_reading, _premise, _gain_split, signal_section, _runs, pass_at_k, _compute, trajectory, pareto,
            curves, drift, _forgetting, ablations, diversity_section)  # fmt: skip
"""``REPORT.md``'s sections after its head, in order."""
