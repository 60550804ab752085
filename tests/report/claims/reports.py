"""In-memory reports for judging claims: per-problem chances, drawn counts, GRPO's trajectory.

Problems have chances ``p_i`` of a correct sample (Beta-distributed, mean ≈ 0.29 as the CPU
report's base model); an evaluation draws ``Binomial(M, p_i)`` correct samples per problem and
seed. A method "that did nothing" reuses the base's chances; GRPO sharpens them along its
trajectory (confident problems rise, hard ones fall: Pass@1 up, coverage down).
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


def base_chances(seed: int = 0, problems: int = PROBLEMS) -> np.ndarray:
    return np.random.default_rng(seed).beta(0.8, 1.96, size=problems)  # Pass@1 ≈ 0.29, Pass@32 ≈ 0.90


def sharpen(p: np.ndarray, strength: float) -> np.ndarray:
    """GRPO after some updates: logits scaled by ``1 + strength`` and shifted up."""
    logit = np.log(np.clip(p, 1e-6, 1 - 1e-6) / (1 - np.clip(p, 1e-6, 1 - 1e-6)))
    return 1 / (1 + np.exp(-(logit * (1 + strength) + 0.8 * strength)))


def draw(p: np.ndarray, rng: np.random.Generator, seeds: list[int] = SEEDS) -> dict[int, np.ndarray]:
    return {s: rng.binomial(M, p) for s in seeds}


def grpo_path(
    p: np.ndarray, rng: np.random.Generator, steps: list[int], total: int
) -> dict[str, dict[int, np.ndarray]]:
    """Outcomes of GRPO's checkpoints (``grpo@t``) and its end (``grpo``); step 0 is the base."""
    out = {}
    for step in steps:
        name = "grpo" if step == total else f"grpo@{step}"
        out[name] = draw(sharpen(p, 1.5 * step / total), rng)
    return out


def build(
    counts: dict[str, dict[int, np.ndarray]],
    methods: list[str] | None = None,
    steps: list[int] | None = None,
    budget: int = 30,
    verdicts: dict[str, Any] | None = None,
    **blocks: Any,
) -> dict[str, Any]:
    """A report dict as ``build_report`` leaves it before judging: config, outcomes, trajectory
    (when ``steps``), stages of the sequential methods (an even split), and ``blocks``."""
    methods = methods or [m for m in counts if m != "base" and "@" not in m]
    problems = [f"p{i}" for i in range(len(next(iter(counts["base"].values()))))]
    report: dict[str, Any] = {
        "config": {
            "methods": {m: f"{m}.yaml" for m in methods},
            "seeds": SEEDS,
            "ks": [1, 2, 4, 8, 16, 32],
            "pareto_ks": [16, 32],
            "frontier_methods": ["base", "es", "grpo"],
            "quick": False,
            "verdicts": asdict(VerdictSettings(**(verdicts or {}))),
        },
        "evaluations": {"task": "t"},
        "outcomes": {
            "task": "t",
            "m": M,
            "problems": problems,
            "counts": {n: {str(s): c.tolist() for s, c in by_seed.items()} for n, by_seed in counts.items()},
            "missing": {},
        },
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
        points = ["base", *(f"grpo@{s}" for s in steps[1:-1]), "grpo"]
        report["trajectory"] = {"method": "grpo", "every": steps[1], "steps": steps, "points": points}
    report.update(blocks)
    return report


def verdicts_of(report: dict[str, Any]) -> dict[str, str]:
    """``{claim: verdict}`` after judging."""
    report.update(judge(report))
    return {c["claim"]: c["verdict"] for c in report["claims"]}
