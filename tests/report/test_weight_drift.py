"""`es-lightning analyze` calls and their outputs over seeds (synthetic analysis files)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import es_lightning.report.runs as runs
from es_lightning.report import DriftSettings
from es_lightning.report.command import build_plan
from es_lightning.report.weight_drift import analysis_file, analyze_command, collect_drift, run_analyses
from tests.report.synthetic import summary, training_metrics, write_single


@pytest.fixture()
def finished(tmp_path):
    rng = np.random.default_rng(0)
    dirs = {}
    for method in ("es", "grpo"):
        for seed in (0, 1):
            run_dir = tmp_path / "runs" / method / f"seed{seed}"
            write_single(run_dir, summary(0.4, rng), summary(0.6, rng), training_metrics(rng, 10, 0.0))
            dirs.setdefault(method, {})[seed] = run_dir
    return dirs


def _plan(tmp_path, **kwargs):
    drift = DriftSettings(methods=["es", "grpo"], export_thresholded=[1e-3, 1.5e-3], evaluate="arithmetic")
    return build_plan({"es": "es.yaml", "grpo": "grpo.yaml"}, tmp_path, drift=drift, **kwargs)


def test_analyze_command(tmp_path, finished):
    plan = _plan(tmp_path)
    out = analysis_file(plan, "es", 0)
    argv = analyze_command(plan, finished["es"][0], out, curve=True)
    assert argv[1:4] == ["-m", "es_lightning", "analyze"]
    args = dict(zip(argv[4::2], argv[5::2]))
    assert args == {
        "--base": "es-lightning/tiny-arithmetic",
        "--checkpoint": str(finished["es"][0] / "checkpoints" / "step-000010"),
        "--taus": "0.0001,0.0005,0.001,0.0015,0.005",
        "--top_k": "100",
        "--export_thresholded": "0.001,0.0015",
        "--evaluate": "arithmetic",
        "--output": str(tmp_path / "analysis" / "es" / "seed0.json"),
    }
    assert "--export_thresholded" not in analyze_command(plan, finished["es"][0], out, curve=False)
    assert analyze_command(plan, tmp_path / "nothing", out, curve=False).startswith("no checkpoint")


def test_quick_mode_skips_the_thresholded_evaluation(tmp_path, finished, monkeypatch):
    calls = []

    def fake(argv, log, timeout_s=None):
        calls.append(argv)
        curve = {"sparsity_curve": [], "sparsity_curve_base": {}}
        data = {"rel_l2": 0.1, **(curve if "--export_thresholded" in argv else {})}
        Path(argv[argv.index("--output") + 1]).write_text(json.dumps(data))
        return 0

    monkeypatch.setattr(runs, "run_logged", fake)  # what logged_record runs
    records = run_analyses(_plan(tmp_path, quick=True), finished, launch=True)
    assert [r["status"] for r in records] == ["finished"] * 4
    assert not any("--export_thresholded" in argv for argv in calls)
    again = run_analyses(_plan(tmp_path, quick=True), finished, launch=True)
    assert [r["status"] for r in again] == ["reused"] * 4 and len(calls) == 4
    # the full report wants ES's sparsity curve, which the quick analyses lack: ES is analysed again
    full = run_analyses(_plan(tmp_path), finished, launch=True)
    assert [r["status"] for r in full] == ["finished", "finished", "reused", "reused"]
    # an ES analysis written before the base was scored on the curve's engine is run again
    for seed in (0, 1):
        path = tmp_path / "analysis" / "es" / f"seed{seed}.json"
        path.write_text(json.dumps({"rel_l2": 0.1, "sparsity_curve": []}))
    again = run_analyses(_plan(tmp_path), finished, launch=True)
    assert [r["status"] for r in again] == ["finished", "finished", "reused", "reused"]


def test_a_failed_analysis_is_recorded(tmp_path, finished, monkeypatch):
    def failing(argv, log, timeout_s=None):
        log.write_text("analyze: error: no such checkpoint\n")
        return 2

    monkeypatch.setattr(runs, "run_logged", failing)
    records = run_analyses(_plan(tmp_path), finished, launch=True)
    assert {r["status"] for r in records} == {"failed"}
    assert records[0]["returncode"] == 2 and "no such checkpoint" in records[0]["error"]
    assert collect_drift(_plan(tmp_path), finished)["methods"]["es"]["source"] == "metrics.jsonl"


def test_tau_keys_in_any_spelling_line_up(tmp_path, finished):
    plan = _plan(tmp_path)
    for seed, key, value in ((0, "1.5e-3", 0.8), (1, "0.0015", 0.9)):
        path = analysis_file(plan, "es", seed)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"rel_l2": 0.01 * (seed + 1), "sparsity": {key: value}}))
    drift = collect_drift(plan, {"es": finished["es"]})
    s = drift["methods"]["es"]["sparsity"]["0.0015"]
    assert s["values"] == [0.8, 0.9] and s["n"] == 2
    assert drift["ratio"] is None  # no GRPO analysis or logged drift among the runs given
