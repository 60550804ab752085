"""In-memory reports for judging claims: per-problem chances, drawn counts, GRPO's trajectory.

Problems have chances ``p_i`` of a correct sample (Beta-distributed; the default shape has mean
≈ 0.29 as the CPU report's base model); an evaluation draws ``Binomial(M, p_i)`` correct samples
per problem and seed. A method "that did nothing" reuses the base's chances (the permuted control
does); GRPO sharpens them along its trajectory (confident problems rise, hard ones fall: Pass@1
up, coverage down). Reports are judged with fewer bootstrap resamples than the default (fast;
the smallest p-value is still ``1/401``).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np

from es_lightning.report.claims import judge
from es_lightning.report.config import VerdictSettings

M = 32
SEEDS = [0, 1, 2]
PROBLEMS = 200
STEPS = [0, 5, 10, 15, 20, 25, 30]
FAST = {"bootstrap_resamples": 400}

Counts = dict[str, dict[int, np.ndarray]]


def base_chances(
    seed: int = 0, problems: int = PROBLEMS, shape: tuple[float, float] = (0.8, 1.96)
) -> np.ndarray:
    return np.random.default_rng(seed).beta(*shape, size=problems)  # default: Pass@1 ≈ 0.29, Pass@32 ≈ 0.90


def sharpen(p: np.ndarray, strength: float) -> np.ndarray:
    """GRPO after some updates: logits scaled by ``1 + strength`` and shifted up."""
    logit = np.log(np.clip(p, 1e-6, 1 - 1e-6) / (1 - np.clip(p, 1e-6, 1 - 1e-6)))
    return 1 / (1 + np.exp(-(logit * (1 + strength) + 0.8 * strength)))


def shifted(p: np.ndarray, by: float) -> np.ndarray:
    """Every problem's chance moved by ``by`` (clipped to [0, 1])."""
    return np.clip(p + by, 0.0, 1.0)


def draw(p: np.ndarray, rng: np.random.Generator, seeds: list[int] = SEEDS) -> dict[int, np.ndarray]:
    return {s: rng.binomial(M, p) for s in seeds}


def grpo_path(
    p: np.ndarray, rng: np.random.Generator, steps: list[int] = STEPS, seeds: list[int] = SEEDS
) -> Counts:
    """Outcomes of GRPO's checkpoints (``grpo@t``) and its end (``grpo``) after step 0 (the base):
    the chances sharpened by ``1.5·t/T``."""
    total = steps[-1]
    return {
        ("grpo" if step == total else f"grpo@{step}"): draw(sharpen(p, 1.5 * step / total), rng, seeds)
        for step in steps[1:]
    }


def path_names(steps: list[int] = STEPS, method: str = "grpo") -> list[str]:
    return ["base", *(f"{method}@{s}" for s in steps[1:-1]), method]


def outcomes_block(counts: Counts, task: str = "t") -> dict[str, Any]:
    """An ``outcomes`` block (``counts`` as JSON: seeds as strings, counts as lists)."""
    first = next(iter(next(iter(counts.values())).values()))
    return {
        "task": task,
        "m": M,
        "problems": [f"{task}{i}" for i in range(len(first))],
        "counts": {n: {str(s): np.asarray(c).tolist() for s, c in by.items()} for n, by in counts.items()},
        "missing": {},
    }


def build(
    counts: Counts,
    methods: list[str] | None = None,
    steps: list[int] | None = None,
    budget: int = 30,
    verdicts: dict[str, Any] | None = None,
    pareto_ks: list[int] | None = None,
    **blocks: Any,
) -> dict[str, Any]:
    """A report dict as ``build_report`` leaves it before judging: config, outcomes, trajectory
    (when ``steps``), stages of the sequential methods (an even split), and ``blocks``."""
    methods = methods or [m for m in counts if m != "base" and "@" not in m]
    seeds = sorted({int(s) for by in counts.values() for s in by})
    report: dict[str, Any] = {
        "config": {
            "methods": {m: f"{m}.yaml" for m in methods},
            "seeds": seeds,
            "ks": [1, 2, 4, 8, 16, 32],
            "pareto_ks": pareto_ks or [16, 32],
            "frontier_methods": ["base", "es", "grpo"],
            "quick": False,
            "verdicts": asdict(VerdictSettings(**{**FAST, **(verdicts or {})})),
        },
        "evaluations": {"task": "t"},
        "outcomes": outcomes_block(counts),
        "budgets": {m: budget for m in methods},
        "stages": {
            m: [{"name": n, "updates": budget // 2} for n in m.split("_then_")]
            for m in methods
            if "_then_" in m
        },
        "trajectory": None,
        "curves": {},
        "drift": {"methods": {}},
        "ablations": {},
    }
    if steps:
        report["trajectory"] = {
            "method": "grpo",
            "every": steps[1],
            "steps": steps,
            "points": path_names(steps),
        }
    report.update(blocks)
    return report


def judged(report: dict[str, Any]) -> dict[str, Any]:
    """``report`` with its judgement (intervals, premise, claims, families, ...) added."""
    report.update(judge(report))
    return report


def verdicts_of(report: dict[str, Any]) -> dict[str, str]:
    """``{claim: verdict}`` after judging."""
    judged(report)
    return {c["claim"]: c["verdict"] for c in report["claims"]}


def claim_of(report: dict[str, Any], name: str) -> dict[str, Any]:
    """The judged claim called ``name``."""
    return next(c for c in report["claims"] if c["claim"] == name)
