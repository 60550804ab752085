"""What every claim family reads: the report's settings, its intervals, the ES premise, formats."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from es_lightning.report.bootstrap import Interval
from es_lightning.report.config import VerdictSettings
from es_lightning.report.evidence import Evidence
from es_lightning.report.intervals import ProblemBootstrap
from es_lightning.report.stats import fmt_number
from es_lightning.report.verdicts import ONE_SEED, decide

PCT = {"scale": 100.0, "spec": ".1f"}


def verdict_settings(config: dict[str, Any]) -> VerdictSettings:
    """The report's ``verdicts:`` block (defaults for a report written before it existed)."""
    saved = config.get("verdicts") or {}
    known = {f.name for f in fields(VerdictSettings)}
    return VerdictSettings(**{k: v for k, v in saved.items() if k in known})


@dataclass
class Context:
    """One report being judged."""

    report: dict[str, Any]
    settings: VerdictSettings
    boot: ProblemBootstrap | None
    big_k: int | None
    """The largest K with a Pareto plot (the coverage claims' K)."""
    premise: str | None = None
    """Why ES-relative claims cannot be judged (``None``: ES learned, they are judged)."""
    premise_numbers: dict[str, Any] = field(default_factory=dict)

    @property
    def level(self) -> float:
        return self.settings.level

    @property
    def level_pct(self) -> str:
        return f"{100 * self.level:g}%"


def points(fraction: float) -> str:
    """A Pass@K margin in points: ``0.01`` → ``1 point``, ``0.02`` → ``2 points``."""
    value = 100 * fraction
    return f"{value:g} point" + ("" if value == 1 else "s")


def interval_json(value: Interval | None) -> dict[str, Any] | None:
    return None if value is None else value.to_json()


def fmt_interval(
    data: dict[str, Any] | None, scale: float = 1.0, spec: str = ".1f", sign: bool = True
) -> str:
    """``estimate [low, high]`` (the one-sided bounds), ``–`` when absent."""
    if not data:
        return "–"
    est = fmt_number(data["estimate"], scale, spec, sign)
    if data["low"] != data["low"]:  # NaN: no interval
        return f"{est} [no interval]"
    return (
        f"{est} [{fmt_number(data['low'], scale, spec, sign)}, {fmt_number(data['high'], scale, spec, sign)}]"
    )


def claim(name: str, paper: str, measured: str, verdict: str, rule: str, **numbers: Any) -> dict[str, Any]:
    """One row of the reading: the claim, the paper's number, ours, the verdict and its rule."""
    return {
        "claim": name,
        "paper": paper,
        "measured": measured,
        "verdict": verdict,
        "rule": rule,
        "numbers": numbers,
    }


def evidence_json(value: Evidence | None) -> dict[str, Any] | None:
    return None if value is None else value.to_json()


def tested(
    base: dict[str, Any],
    family: str,
    evidence: Evidence,
    p_reproduce: float,
    p_refute: float | None,
    level: float,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """``base`` (a :func:`claim`) judged by two tests on ``evidence``: its verdict is set by
    :func:`~es_lightning.report.verdicts.apply_holm` with the rest of ``family``; on one seed it is
    ``not resolved (one seed)`` and takes no part."""
    if evidence.n_seeds < 2:
        return {**base, "verdict": ONE_SEED}
    test = {"family": family, "p_reproduce": p_reproduce, "p_refute": p_refute, "labels": labels or {}}
    outcome = decide(p_reproduce, p_refute, 1.0 - level)
    return {**base, "verdict": test["labels"].get(outcome, outcome), "test": test}
