"""A whole synthetic report folder (three seeds, four methods, analyses, three ablations), built once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from es_lightning.report import Ablation, DriftSettings, TrajectorySettings, run_report
from tests.report.synthetic import (
    TASK,
    counts_summary,
    draw_counts,
    summary,
    training_metrics,
    write_analysis,
    write_outcomes,
    write_pipeline,
    write_single,
)

SEEDS = [0, 1, 2]
PASS1 = {"es": 0.62, "grpo": 0.70, "es_then_grpo": 0.66, "grpo_then_es": 0.64, "es_permuted": 0.45}
ENTROPY_SLOPE = {"es": 0.0, "grpo": -0.05, "es_then_grpo": -0.02, "grpo_then_es": -0.02, "es_permuted": 0.0}
TRAJECTORY = TrajectorySettings(method="grpo", every=5)
"""GRPO's 10 updates with a checkpoint at 5, evaluated by the report (written here as if it had)."""
ABLATIONS = {
    "population_size": Ablation(
        recipe="es.yaml", parameter="strategy.init_args.population_size", values=[8, 16, 32]
    ),
    "estimator": Ablation(
        recipe="es.yaml", parameter="strategy.init_args.estimator", values=["one_point", "antithetic"]
    ),
    "kappa_pair": Ablation(
        recipe="es.yaml",
        overrides=["--strategy.init_args.estimator antithetic"],
        variants={
            "common": ["--strategy.init_args.sigma 1e-3"],
            "small_sigma": ["--strategy.init_args.sigma 1e-4"],
        },
        reference={"common": 1.9870, "small_sigma": 0.8194},
    ),
}
KAPPA = {"common": 2.1, "small_sigma": 0.7}


PROBLEMS = 60
DIFFICULTY = np.random.default_rng(7).beta(1.0, 1.2, size=PROBLEMS)
"""Each problem's chance of a correct sample for the base model (mean ≈ 0.45)."""


def chances(pass1: float) -> np.ndarray:
    return np.clip(DIFFICULTY + (pass1 - 0.45), 0.01, 0.99)


def build_runs(root: Path) -> dict[str, Any]:
    """Write every run folder; returns the numbers written, by method / ablation and seed."""
    inputs: dict[str, Any] = {"before": {}, "after": {}, "metrics": {}, "analysis": {}, "ablations": {}}
    inputs["counts"] = {}
    runs = root / "runs"
    for seed in SEEDS:
        rng = np.random.default_rng(100 + seed)
        before_counts = draw_counts(chances(0.45 + 0.01 * seed), rng)
        before = counts_summary(before_counts)
        inputs["before"][seed] = before
        inputs["counts"].setdefault("base", {})[seed] = before_counts
        for method, pass1 in PASS1.items():
            counts = draw_counts(chances(pass1 + 0.03 * seed * (1 if method != "grpo" else -1)), rng)
            after = counts_summary(counts)
            inputs["after"].setdefault(method, {})[seed] = after
            inputs["counts"].setdefault(method, {})[seed] = counts
            run_dir = runs / method / f"seed{seed}"
            given = {
                "before_counts": before_counts,
                "after_counts": counts,
                "greedy": method != "es_permuted",
            }
            if "_then_" in method:
                metrics = [training_metrics(rng, 5, ENTROPY_SLOPE[method]) for _ in range(2)]
                inputs["metrics"].setdefault(method, {})[seed] = metrics
                write_pipeline(run_dir, method.split("_then_"), [5, 5], before, after, metrics, **given)
            else:
                metrics = training_metrics(rng, 10, ENTROPY_SLOPE[method])
                inputs["metrics"].setdefault(method, {})[seed] = metrics
                write_single(run_dir, before, after, metrics, **given)
            if method == "grpo":  # its checkpoint at update 5 and the report's evaluation of it
                (run_dir / "checkpoints" / "step-000005").mkdir()
                (run_dir / "checkpoints" / "step-000005" / "trainer_state.json").write_text('{"step": 5}')
                counts = draw_counts(chances(0.58), rng)
                inputs["counts"].setdefault("grpo@5", {})[seed] = counts
                out = root / "trajectory" / "grpo" / f"seed{seed}" / "step-000005.json"
                write_outcomes(out.parent, "step-000005", counts)
                out.write_text(json.dumps({TASK: counts_summary(counts)}))
        for method, scale, kind in (
            ("es", 4e-3, "norm"),
            ("grpo", 1e-4, "embedding"),
            ("es_permuted", 3e-3, "mlp"),
        ):
            path = root / "analysis" / method / f"seed{seed}.json"
            inputs["analysis"].setdefault(method, {})[seed] = write_analysis(
                path, rng, scale, kind, curve=method == "es", null=method.startswith("es")
            )
        for name, ablation in ABLATIONS.items():
            for label in ablation.runs(quick=False):
                if name == "population_size" and label == "32":
                    continue  # never run: reported as missing
                kappa = KAPPA.get(label) if name == "kappa_pair" else None
                metrics = training_metrics(rng, 8, 0.0, kappa)
                after = summary(0.5 + 0.1 * rng.random(), rng)
                inputs["ablations"].setdefault(name, {}).setdefault(label, {})[seed] = {
                    "metrics": metrics,
                    "after": after,
                }
                write_single(runs / name / label / f"seed{seed}", before, after, metrics)
    return inputs


@pytest.fixture(scope="session")
def synthetic_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``{"dir", "inputs", "report"}``: the folder, the numbers written and ``run_report``'s result."""
    root = tmp_path_factory.mktemp("synthetic_report")
    inputs = build_runs(root)
    report = run_report(
        methods={m: f"{m}.yaml" for m in PASS1},
        output_dir=root,
        seeds=len(SEEDS),
        ablations=ABLATIONS,
        trajectory=TRAJECTORY,
        drift=DriftSettings(export_thresholded=[1e-4, 5e-4, 1e-3], evaluate="arithmetic"),
        launch=False,
    )
    return {"dir": root, "inputs": inputs, "report": report}
