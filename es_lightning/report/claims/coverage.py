"""Pass@K claims: GRPO's accuracy and coverage, and ES's coverage at matched Pass@1.

Every interval here is the union of the seed-level t interval and the two-level bootstrap
(:mod:`~es_lightning.report.evidence`); without per-problem outcomes every claim says
``insufficient data``. Families (Holm within each, :func:`~es_lightning.report.verdicts.apply_holm`):

- ``grpo``: GRPO raises Pass@1 and lowers Pass@K below the starting model.
- ``primary``: ES's Pass@K at ``verdicts.primary_k`` minus GRPO's trajectory at ES's Pass@1
  (:mod:`~es_lightning.report.matched`). Reproduced when above 0; not reproduced when below
  ``verdicts.primary_margin`` δ (ES is not meaningfully above GRPO's path: "ES behaves as slow GRPO
  here"), a finding the study is sized to reach either way.
- ``coverage``: the same at the other Pareto K's and against every other trajectory (GRPO sampled
  at another temperature); ES against the base model's temperature path (the base sampled cooler:
  sharpening with no training, the ``sharpening`` block); and "ES keeps Pass@K" against its own
  permuted-reward control (non-inferiority with ``verdicts.pass_margin``), not against the base: a
  random walk of ES's step size moves Pass@K too, and a method that did nothing keeps everything.

ES's claims rest on its premise (:mod:`~es_lightning.report.claims.premise`).
"""

from __future__ import annotations

from typing import Any

from es_lightning.report.claims.common import PCT, Context, claim, evidence_json, fmt_interval, points, tested
from es_lightning.report.evidence import Evidence
from es_lightning.report.matched import beyond_note, matched_difference
from es_lightning.report.verdicts import insufficient

NO_OUTCOMES = insufficient("no per-problem outcomes")
SLOW_GRPO = "not reproduced: ES lies on or below GRPO's path (ES behaves as slow GRPO here)"
SHARPENING = "not reproduced: ES lies on or below the base's temperature path (sharpening)"


def difference(ctx: Context, a: str, b: str, k: int | None) -> Evidence | None:
    return ctx.boot.difference_evidence(a, b, k) if ctx.boot and k else None


def missing(ctx: Context, *methods: str) -> str:
    """Why a comparison of ``methods`` has no evidence."""
    if ctx.boot is None:
        return NO_OUTCOMES
    absent = [m for m in methods if not ctx.boot.has(m)]
    return insufficient(f"no per-problem outcomes of {', '.join(absent)}") if absent else NO_OUTCOMES


def trajectory_paths(ctx: Context) -> dict[str, list[str] | str]:
    """Each trajectory's path as outcome names (its method first: the primary path), or why not."""
    block = ctx.report.get("trajectory") or {}
    paths = block.get("paths") or ({block["method"]: block} if block.get("points") else {})
    out: dict[str, list[str] | str] = {}
    for method, path in paths.items():
        names = list(path["points"])
        absent = [p for p in names if ctx.boot is None or not ctx.boot.has(p)]
        out[method] = (
            NO_OUTCOMES
            if ctx.boot is None
            else (
                insufficient(f"the {method} trajectory lacks outcomes at {', '.join(absent)}")
                if absent
                else names
            )
        )
    return out


def primary_path(ctx: Context) -> list[str] | str:
    paths = trajectory_paths(ctx)
    return next(iter(paths.values())) if paths else insufficient("no GRPO trajectory")


def sharpening_path(ctx: Context) -> list[str] | str:
    """The base model's temperature path (hottest first), or why there is none."""
    names = list((ctx.report.get("sharpening") or {}).get("points") or [])
    if not names:
        return insufficient("no sharpening reference (the base at other temperatures)")
    absent = [p for p in names if ctx.boot is None or not ctx.boot.has(p)]
    return insufficient(f"no outcomes of {', '.join(absent)}") if absent else names


def versus_path(
    ctx: Context, method: str, path: list[str] | str, k: int | None
) -> tuple[Evidence | None, str]:
    """``method``'s Pass@K minus the path's at its Pass@1, and a note (or why not)."""
    if isinstance(path, str):
        return None, path
    found = matched_difference(ctx.boot, method, path, k) if ctx.boot and k else None
    if found is None:
        return None, missing(ctx, method, *path)
    evidence, beyond = found
    return evidence, beyond_note(beyond, len(ctx.boot.indices)) or ""


def _grpo_claims(ctx: Context, k: int | None, at_k: str) -> list[dict[str, Any]]:
    out = []
    for name, paper, what, kk, sign in (
        ("GRPO raises Pass@1", "Pass@1 above the starting model", "grpo − base Pass@1", 1, ">"),
        (
            f"GRPO lowers {at_k} below the starting model",
            "lower coverage at large K",
            f"grpo − base {at_k}",
            k,
            "<",
        ),
    ):
        d = difference(ctx, "grpo", "base", kk)
        rule = f"{sign} 0: one-sided {ctx.level_pct} bounds of the seed t and the two-level bootstrap, Holm over GRPO's claims"
        base = claim(
            name,
            paper,
            f"{what} (points) = {fmt_interval(evidence_json(d), **PCT)}",
            "",
            rule,
            difference=evidence_json(d),
        )
        if d is None:
            out.append({**base, "verdict": missing(ctx, "grpo", "base")})
            continue
        up, down = (d.p_greater(), d.p_less()) if sign == ">" else (d.p_less(), d.p_greater())
        out.append(tested(base, "grpo", d, up, down, ctx.level))
    return out


def matched_claim(
    ctx: Context,
    method: str,
    path: list[str] | str,
    k: int,
    family: str,
    against: str,
    label: str,
    gate: str | None,
) -> dict[str, Any]:
    """ "``method`` covers more than ``against`` at Pass@k": above the path at its Pass@1 (> 0),
    refuted below the margin δ."""
    margin = ctx.settings.primary_margin
    who = "ES" if method == "es" else method
    name = f"{who} covers more than {against} at Pass@{k} (matched Pass@1)"
    rule = f"premise, then {method}'s Pass@{k} − the path's at its Pass@1: > 0 reproduces, < {points(margin)} refutes (one-sided {ctx.level_pct}, seed t and two-level bootstrap, Holm within the family)"
    d, note = versus_path(ctx, method, path, k)
    text = f"{method} Pass@{k} − {against}'s at {method}'s Pass@1 (points) = {fmt_interval(evidence_json(d), **PCT)}"
    endpoint = difference(ctx, method, "grpo", k) if against.startswith("GRPO") else None
    if endpoint is not None:
        text += f"; − grpo at the end points = {fmt_interval(evidence_json(endpoint), **PCT)}"
    text += f" ({note})" if note and d is not None else ""
    base = claim(name, f"{who} above {against} at large K", text, "", rule, matched=evidence_json(d))
    if gate is not None or d is None:
        return {**base, "verdict": gate if gate is not None else note}
    return tested(base, family, d, d.p_greater(), d.p_less(margin), ctx.level, {"not reproduced": label})


def keeps_versus_control(
    ctx: Context, method: str, k: int | None, at_k: str, gate: str | None
) -> dict[str, Any]:
    """ "``method`` keeps Pass@K": not more than ``pass_margin`` below its permuted-reward control."""
    margin = ctx.settings.pass_margin
    control = ctx.settings.permuted_control
    who = "ES" if method == "es" else method
    d = difference(ctx, method, control, k)
    rule = f"premise, then non-inferiority to the permuted control: lower bound > −{points(margin)} (seed t and two-level bootstrap)"
    text = f"{method} − {control} {at_k} (points) = {fmt_interval(evidence_json(d), **PCT)}"
    over_base = difference(ctx, method, "base", k)
    text += f"; − base = {fmt_interval(evidence_json(over_base), **PCT)}"
    base = claim(
        f"{who} keeps {at_k} (against its permuted control)",
        "no loss of coverage at large K",
        text,
        "",
        rule,
        difference=evidence_json(d),
    )
    if gate is not None or d is None:
        return {**base, "verdict": gate if gate is not None else missing(ctx, method, control)}
    return tested(base, "coverage", d, d.p_greater(-margin), d.p_less(-margin), ctx.level)


def coverage_claims(ctx: Context) -> list[dict[str, Any]]:
    k = ctx.big_k
    at_k = f"Pass@{k or 'K'}"
    out = _grpo_claims(ctx, k, at_k)
    primary_k = ctx.settings.primary_k or k
    ks = [
        int(x) for x in ctx.report["config"].get("pareto_ks", []) if ctx.boot is None or int(x) <= ctx.boot.m
    ]
    paths = trajectory_paths(ctx)
    first = next(iter(paths), "grpo")
    main = paths.get(first, insufficient("no GRPO trajectory"))
    if primary_k:
        out.append(matched_claim(ctx, "es", main, primary_k, "primary", "GRPO", SLOW_GRPO, ctx.premise))
    for kk in ks:
        if kk != primary_k:
            out.append(matched_claim(ctx, "es", main, kk, "coverage", "GRPO", SLOW_GRPO, ctx.premise))
    for method, path in list(paths.items())[1:]:
        out.append(
            matched_claim(ctx, "es", path, primary_k, "coverage", f"GRPO ({method})", SLOW_GRPO, ctx.premise)
        )
    if ctx.report.get("sharpening"):
        for kk in ks:
            out.append(
                matched_claim(
                    ctx,
                    "es",
                    sharpening_path(ctx),
                    kk,
                    "coverage",
                    "the base's temperature path",
                    SHARPENING,
                    ctx.premise,
                )
            )
    out.append(keeps_versus_control(ctx, "es", k, at_k, ctx.premise))
    return out
