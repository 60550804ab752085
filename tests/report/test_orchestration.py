"""End to end with real `es-lightning fit` and `evaluate` subprocesses on the tiny built-in model (about 90 s)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from es_lightning.report import Ablation, DriftSettings, run_report
from es_lightning.report.config import TrajectorySettings
from es_lightning.report.runs import LOG_NAME
from es_lightning.report.summaries import export_summaries
from tests.report.synthetic import assert_same_report

pytestmark = pytest.mark.integration

TINY_RECIPE = """
module:
  model: es-lightning/tiny-random
  task:
    class_path: es_lightning.tasks.Echo
    init_args: {length: 4, n_train: 8, n_test: 4}
  dtype: float32
  train_sampling: {temperature: 0.0, max_tokens: 6}
strategy:
  class_path: es_lightning.strategies.ESStrategy
  init_args: {population_size: 2, sigma: 0.02, learning_rate: 0.05}
rollout:
  class_path: es_lightning.rollout.hf.HFRollout
trainer:
  max_steps: 2
  batch_size: 4
  accelerator: cpu
  progress_bar: false
evaluation: {num_samples: 2, temperature: 0.6, max_tokens: 6, ks: [1, 2], greedy: true}
"""


def test_real_runs_then_reuse(tmp_path: Path):
    recipe = tmp_path / "tiny.yaml"
    recipe.write_text(TINY_RECIPE)
    kwargs = dict(
        methods={"es": str(recipe)},
        output_dir=tmp_path / "report",
        seeds=1,
        ablations={
            "population_size": Ablation(
                recipe=str(recipe), parameter="strategy.init_args.population_size", values=[4]
            )
        },
        drift=DriftSettings(enabled=False),
        trajectory=TrajectorySettings(method="es", every=1),  # its checkpoint at update 1, evaluated
        pareto_ks=[2],
        ablation_ks=[1, 2],
    )
    report = run_report(**kwargs)
    assert report["failures"] == [], report["failures"]
    runs = tmp_path / "report" / "runs"
    assert (runs / "es" / "seed0" / "eval" / "after.json").is_file()
    config = (runs / "population_size" / "4" / "seed0" / "config.yaml").read_text()
    assert "population_size: 4" in config and "seed: 0" in config
    assert report["evaluations"]["task"] == "echo"
    assert set(report["evaluations"]["pass_at_k"]) == {"base", "es"}
    assert "pareto_pass1_pass2.png" in report["figures"]

    assert report["trajectory"]["steps"] == [0, 1, 2]
    point = tmp_path / "report" / "trajectory" / "es" / "seed0" / "step-000001.json"
    assert json.loads(point.read_text())["echo"]["n_prompts"] == 4  # es-lightning evaluate on the checkpoint
    counts = report["outcomes"]["counts"]
    assert set(counts) == {"base", "es", "es@1"} and len(counts["es@1"]["0"]) == 4
    assert report["compute"]["es"]["updates"]["mean"] == 2

    logs = {p: p.stat().st_mtime_ns for p in [*runs.rglob(LOG_NAME), point.with_suffix(".log")]}
    assert len(logs) == 3
    again = run_report(**kwargs)
    assert {r["status"] for r in again["runs"]} == {"reused"}
    assert {p: p.stat().st_mtime_ns for p in logs} == logs  # nothing was rerun or re-evaluated
    saved = json.loads((tmp_path / "report" / "report.json").read_text())
    assert saved["evaluations"] == again["evaluations"] == report["evaluations"]

    # its summaries (counts, no completions, no weights) rebuild the same report.json
    export_summaries(tmp_path / "report", tmp_path / "kept")
    assert not list((tmp_path / "kept").rglob("*_completions.jsonl"))
    from_counts = run_report(**{**kwargs, "output_dir": tmp_path / "kept", "launch": False})
    assert from_counts["outcomes"] == saved["outcomes"]
    assert {m: len(g["0"]) for m, g in saved["outcomes"]["greedy"].items()} == {"base": 4, "es": 4, "es@1": 4}
    assert_same_report(saved, json.loads((tmp_path / "kept" / "report.json").read_text()))
