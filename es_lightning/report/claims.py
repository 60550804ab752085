"""The honest reading: each of the paper's claims, the number measured here, and a verdict.

A difference (paired by seed, mean ± sample sd over n seeds) gives a verdict by one rule:

- ``not measured``: an input is absent (the run failed, the method was not run, no analysis);
- ``not resolved (one seed)``: n < 2, so there is no spread to compare with;
- ``not resolved at this scale``: |mean| ≤ sd;
- ``reproduced`` / ``not reproduced``: |mean| > sd and the sign agrees / disagrees with the claim.

Thresholds (a ratio above 1, κ_pair on the paper's side of 1) use ``mean − threshold`` the same
way; a range (s_τ in 78–93%) is reproduced when the mean lies inside it and not reproduced when
mean ± sd lies wholly outside.
"""

from __future__ import annotations

from typing import Any

from es_lightning.report.stats import fmt_number, fmt_stat, paired_difference, stat_json

NOT_MEASURED = "not measured"
ONE_SEED = "not resolved (one seed)"
UNRESOLVED = "not resolved at this scale"


def verdict(data: dict[str, Any] | None, expect: str, threshold: float = 0.0) -> str:
    """Verdict of a measured Stat against ``mean > threshold`` (``greater``) or ``< threshold``."""
    if not data:
        return NOT_MEASURED
    if data["n"] < 2:
        return ONE_SEED
    gap = data["mean"] - threshold
    if abs(gap) <= data["sd"]:
        return UNRESOLVED
    return "reproduced" if (gap > 0) == (expect == "greater") else "not reproduced"


def range_verdict(data: dict[str, Any] | None, low: float, high: float) -> str:
    if not data:
        return NOT_MEASURED
    if data["n"] < 2:
        return ONE_SEED
    mean, sd = data["mean"], data["sd"]
    if low <= mean <= high:
        return "reproduced"
    return "not reproduced" if mean + sd < low or mean - sd > high else UNRESOLVED


def seed_count_verdict(hits: int, n: int, on_mean: bool | None = None) -> str:
    """Verdict of a yes/no property checked per seed (and optionally on the seeds' mean): reproduced
    when it holds in every seed, not reproduced when in none, otherwise not resolved."""
    if n == 0:
        return NOT_MEASURED
    if n < 2:
        return ONE_SEED
    if hits == n and on_mean is not False:
        return "reproduced"
    if hits == 0 and on_mean is not True:
        return "not reproduced"
    return UNRESOLVED


def _seeds(data: dict[str, Any] | None) -> dict[int, float]:
    if not data:
        return {}
    return dict(zip(data.get("seeds") or range(len(data["values"])), data["values"]))


def _n(data: dict[str, Any] | None) -> str:
    return f" ({data['n']} seed{'s' if data['n'] != 1 else ''})" if data else ""


def _claim(claim: str, paper: str, measured: str, result: str, **numbers: Any) -> dict[str, Any]:
    return {"claim": claim, "paper": paper, "measured": measured, "verdict": result, "numbers": numbers}


def _difference(claim: str, paper: str, what: str, d: dict | None, expect: str, **fmt: Any) -> dict[str, Any]:
    """A claim about a paired difference ``d``: ``what = +x ± y (n seeds)``."""
    text = f"{what} = {fmt_stat(d, sign=True, **fmt)}{_n(d)}" if d else "–"
    return _claim(claim, paper, text, verdict(d, expect), difference=d)


def _pass_claims(report: dict[str, Any]) -> list[dict[str, Any]]:
    evaluations, pareto = report["evaluations"], report["pareto"]
    diff, per_seed = evaluations["difference_to_base"], evaluations["per_seed"]
    big = str(max(int(k) for k in pareto)) if pareto else None  # the largest K with a Pareto plot
    pct = {"scale": 100.0, "spec": ".1f"}
    at_big = f"Pass@{big or 'K'}"
    out = [
        _difference(
            "GRPO raises Pass@1",
            "Pass@1 above the starting model",
            "grpo Pass@1 − base (points)",
            diff.get("grpo", {}).get("1"),
            "greater",
            **pct,
        ),
        _difference(
            f"GRPO lowers {at_big} below the starting model",
            "lower coverage at large K",
            f"grpo {at_big} − base (points)",
            diff.get("grpo", {}).get(big or ""),
            "less",
            **pct,
        ),
        _difference(
            f"ES keeps or raises {at_big}",
            "no loss of coverage at large K",
            f"es {at_big} − base (points)",
            diff.get("es", {}).get(big or ""),
            "greater",
            **pct,
        ),
    ]
    es, grpo = ({int(s): c[big] for s, c in per_seed.get(m, {}).items() if big in c} for m in ("es", "grpo"))
    d = stat_json(paired_difference(es, grpo)) if big else None
    out.append(
        _difference(
            f"ES covers more than GRPO at {at_big}",
            "ES above GRPO at large K",
            f"es − grpo {at_big} (points)",
            d,
            "greater",
            **pct,
        )
    )
    for k, data in pareto.items():
        for method in data["points"]:
            if method in ("base", *report["config"]["frontier_methods"]):
                continue
            hits, n = len(data["non_dominated_seeds"][method]), data["seeds"][method]
            on_mean = method in data["non_dominated"]
            text = f"{'non-dominated' if on_mean else 'dominated'} on the mean; non-dominated in {hits} of {n} seeds"
            result = seed_count_verdict(hits, n, on_mean)
            claim = f"{method} is non-dominated (Pass@1 vs Pass@{k})"
            out.append(
                _claim(claim, "sequential runs give non-dominated points", text, result, seeds=n, hits=hits)
            )
    return out


def _drift_claims(report: dict[str, Any]) -> list[dict[str, Any]]:
    drift, out = report["drift"], []
    ratio = drift.get("ratio") or {}
    value = ratio.get("value")
    text = f"rel-L2 {ratio.get('numerator')}/{ratio.get('denominator')} = {fmt_stat(value)}×{_n(value)}"
    result = verdict(value, "greater", threshold=1.0)
    out.append(
        _claim("ES drifts further than GRPO (rel-L2)", "≈ 40×", text if value else "–", result, ratio=value)
    )
    s_tau = (drift["methods"].get("es", {}).get("sparsity") or {}).get("0.0015")
    text = f"ES s_τ(1.5e-3) = {fmt_stat(s_tau, 100)}%{_n(s_tau)}" if s_tau else "–"
    paper = "s_τ at τ = 1.5e-3 ≈ 78–93%"
    out.append(_claim("Most ES updates are tiny", paper, text, range_verdict(s_tau, 0.78, 0.93), s_tau=s_tau))
    for method, kinds, paper in (
        ("es", ("norm", "attn", "attention"), "norm / attention"),
        ("grpo", ("embed", "lm_head"), "embedding / lm_head"),
    ):
        tops = drift["methods"].get(method, {}).get("top_kind_by_seed", {})
        hits = sum(any(k in top.lower() for k in kinds) for top in tops.values())
        text = f"most frequent kind among the top-k per seed: {', '.join(tops.values())}" if tops else "–"
        claim = f"{method.upper()}'s largest updates are in {paper}"
        out.append(_claim(claim, paper, text, seed_count_verdict(hits, len(tops)), top_kind_by_seed=tops))
    return out


def _entropy_claims(report: dict[str, Any]) -> list[dict[str, Any]]:
    change = report["curves"]["entropy_change"]
    task = report["evaluations"]["task"]
    by_method = change.get(task) or next(iter(change.values()), {})
    es, grpo = by_method.get("es"), by_method.get("grpo")
    d = stat_json(paired_difference(_seeds(es), _seeds(grpo))) if es and grpo else None
    fmt = {"spec": ".3f"}
    return [
        _difference(
            "GRPO's token entropy falls",
            "falls over training",
            "grpo entropy last − first",
            grpo,
            "less",
            **fmt,
        ),
        _difference(
            "ES keeps its entropy (falls less than GRPO's)",
            "stays",
            "(es − grpo) entropy change",
            d,
            "greater",
            **fmt,
        ),
    ]


def _ablation_claims(report: dict[str, Any]) -> list[dict[str, Any]]:
    ablations, out = report["ablations"], []

    def compare(name: str, a: str | None, b: str | None, claim: str, paper: str) -> None:
        rows = ablations.get(name, {}).get("rows", {})
        ra, rb = rows.get(a or "", {}).get("final_reward"), rows.get(b or "", {}).get("final_reward")
        d = stat_json(paired_difference(_seeds(ra), _seeds(rb))) if ra and rb else None
        out.append(_difference(claim, paper, f"final reward {a} − {b}", d, "greater", spec=".3f"))

    rows = ablations.get("population_size", {}).get("rows", {})
    sizes = [v for _, v in sorted((float(v), v) for v, row in rows.items() if row.get("final_reward"))]
    low, high = (sizes[0], sizes[-1]) if len(sizes) > 1 else (None, None)
    compare("population_size", high, low, "A larger population reaches a higher reward", "N ablation")
    compare("normalization", "zscore", "none", "z-score normalisation matters", "zscore above none")
    compare("estimator", "one_point", "antithetic", "One-point beats antithetic", "at equal rollout budget")
    for name, data in ablations.items():
        for label, row in data["rows"].items():
            ref, kappa = row.get("reference"), row.get("kappa_pair")
            if ref is None:
                continue
            text = f"κ_pair[{label}] = {fmt_stat(kappa, spec='.4f')}{_n(kappa)}" if kappa else "–"
            paper = f"{fmt_number(ref, spec='.4f')} ({'>' if ref > 1 else '<'} 1)"
            result = verdict(kappa, "greater" if ref > 1 else "less", threshold=1.0)
            claim = f"κ_pair {name}/{label} on the paper's side of 1"
            out.append(_claim(claim, paper, text, result, kappa=kappa, reference=ref))
    return out


def build_claims(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Every claim with its measured number and verdict (see the module docstring)."""
    return [
        *_pass_claims(report),
        *_drift_claims(report),
        *_entropy_claims(report),
        *_ablation_claims(report),
    ]
