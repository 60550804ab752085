"""The verdict rules: two tests decide, and a claim needs the data and the premise it rests on.

Each claim carries evidence (:mod:`~es_lightning.report.evidence`: the seed-level t test and the
two-level bootstrap, which must both pass) and two one-sided tests at the report's ``level`` (95 %
by default): the test whose rejection reproduces the claim and the test whose rejection refutes it
(:func:`decide`). The shapes of claims:

- **direction** ("A raises B"): reproduced when "above the threshold" is resolved, not reproduced
  when "below" is;
- **non-inferiority** ("A keeps B", margin δ): reproduced when "above −δ" is resolved, not
  reproduced when "below −δ" is;
- **matched Pass@1** ("A covers more than the path", margin δ): reproduced above 0, not
  reproduced below δ (not meaningfully above the path); where both hold, reproduced.

The claims form families (the primary claim, coverage, GRPO's claims, ES's mechanism, forgetting,
the sequential runs, the ES variants); within each family the p-values of each kind are adjusted by
Holm's step-down (:func:`apply_holm`), so the chance of any false "reproduced" in a family stays at
most ``1 − level``. A claim on one seed is ``not resolved (one seed)``: a seed's spread cannot be
estimated from one. :func:`direction`, :func:`non_inferior` and :func:`within_range` read an
interval's bounds instead (the ablations, which are one-seed, and the tune).

A claim whose inputs are absent says ``insufficient data: <what is missing>``; one that rests on a
premise that failed says why (``vacuous: ES did not learn``) instead of judging the number.
"""

from __future__ import annotations

from typing import Any

from es_lightning.report.evidence import holm

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
UNRESOLVED = "not resolved at this scale"
ONE_SEED = "not resolved (one seed)"
INSUFFICIENT = "insufficient data"
VACUOUS = "vacuous: ES did not learn"

CATEGORIES = (REPRODUCED, NOT_REPRODUCED, "not resolved", INSUFFICIENT, "vacuous")
"""The verdict families, in the order REPORT.md lists them."""


def insufficient(what: str) -> str:
    """``insufficient data: <what>``."""
    return f"{INSUFFICIENT}: {what}"


def category(verdict: str) -> str:
    """The family of a verdict (``not reproduced (on GRPO's trajectory)`` → ``not reproduced``)."""
    for name in (NOT_REPRODUCED, REPRODUCED, INSUFFICIENT, "vacuous"):
        if verdict.startswith(name):
            return name
    return "not resolved"  # "not resolved at this scale", "not resolved (one seed)", ...


def direction(interval: dict[str, Any] | None, expect: str, threshold: float = 0.0) -> str:
    """``expect`` ``greater`` (the claim: estimate > threshold) or ``less``."""
    if not interval:
        return insufficient("no interval")
    if expect == "greater":
        low, high = interval["low"] - threshold, interval["high"] - threshold
    elif expect == "less":
        low, high = threshold - interval["high"], threshold - interval["low"]
    else:
        raise ValueError(f"direction: expect must be 'greater' or 'less', got {expect!r}")
    if low > 0:
        return REPRODUCED
    if high <= 0:
        return NOT_REPRODUCED
    return UNRESOLVED


def non_inferior(interval: dict[str, Any] | None, margin: float, reference: float = 0.0) -> str:
    """The claim "the estimate keeps ``reference``": not below it by more than ``margin``."""
    if not interval:
        return insufficient("no interval")
    if margin < 0:
        raise ValueError(f"non_inferior: margin must be >= 0, got {margin}")
    floor = reference - margin
    if interval["low"] > floor:
        return REPRODUCED
    if interval["high"] < floor:
        return NOT_REPRODUCED
    return UNRESOLVED


def within_range(interval: dict[str, Any] | None, low: float, high: float) -> str:
    """The claim "the estimate lies in ``[low, high]``" (symmetric: the whole interval decides)."""
    if not interval:
        return insufficient("no interval")
    if low <= interval["low"] and interval["high"] <= high:
        return REPRODUCED
    if interval["high"] < low or interval["low"] > high:
        return NOT_REPRODUCED
    return UNRESOLVED


def gated(premise: str | None, verdict: str) -> str:
    """``verdict`` when the premise holds (``None``), else the premise's failure."""
    return verdict if premise is None else premise


def decide(p_reproduce: float, p_refute: float | None, alpha: float) -> str:
    """``reproduced`` when the reproducing test rejects at ``alpha``, else ``not reproduced`` when
    the refuting test does, else ``not resolved at this scale``."""
    if p_reproduce < alpha:
        return REPRODUCED
    if p_refute is not None and p_refute < alpha:
        return NOT_REPRODUCED
    return UNRESOLVED


def apply_holm(claims: list[dict[str, Any]], level: float) -> None:
    """Adjust every tested claim's p-values by Holm within its family and set its verdict from
    them (in place). A claim's ``test`` holds ``family``, ``p_reproduce``, ``p_refute`` and
    ``labels`` (the verdict text of each outcome); untested claims keep their verdict."""
    alpha = 1.0 - level
    families: dict[str, list[dict[str, Any]]] = {}
    for c in claims:
        if c.get("test"):
            families.setdefault(c["test"]["family"], []).append(c)
    for members in families.values():
        tests = [c["test"] for c in members]
        reproduce = holm([t["p_reproduce"] for t in tests])
        refute = holm([1.0 if t["p_refute"] is None else t["p_refute"] for t in tests])
        for c, t, p, q in zip(members, tests, reproduce, refute):
            t["m"] = len(members)
            t["p_reproduce_holm"], t["p_refute_holm"] = p, (None if t["p_refute"] is None else q)
            outcome = decide(p, t["p_refute_holm"], alpha)
            c["verdict"] = (t.get("labels") or {}).get(outcome, outcome)
