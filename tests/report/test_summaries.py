"""Summaries kept in git: the files the report reads, per-problem counts for completions, the same report."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from es_lightning.report import DriftSettings, run_report
from es_lightning.report.outcomes import Outcomes, evaluation_outcomes, read_outcomes
from es_lightning.report.readers import is_finished
from es_lightning.report.summaries import export_summaries, main
from tests.report.conftest import ABLATIONS, PASS1, SEEDS, TRAJECTORY
from tests.report.synthetic import TASK, assert_same_report, greedy_of, summary, write_outcomes, write_single


def test_a_run_folder_is_summarised_without_weights_and_reads_the_same(tmp_path):
    rng = np.random.default_rng(0)
    run = tmp_path / "runs" / "es" / "seed0"
    counts = rng.integers(0, 33, size=50)
    write_single(run, summary(0.3, rng), summary(0.4, rng), [{"step": 1, "train/reward_mean": 0.3}],
                 before_counts=counts, after_counts=counts[::-1].copy(), greedy=True)  # fmt: skip
    (run / "checkpoints" / "step-000001" / "master.safetensors").write_bytes(b"\0" * 1000)
    (run / "report_run.log").write_text("log\n")
    curve = tmp_path / "runs" / "analysis" / "es" / "seed0_thresholded" / "completions"
    curve.mkdir(parents=True)
    row = {"target": 2, "completions": ["A: 2"], "rewards": [1.0]}
    (curve / "completions-tau-0.001.jsonl").write_text(json.dumps(row) + "\n")
    (run / "tensorboard").mkdir()
    (run / "tensorboard" / "events.json").write_text("{}")
    out = tmp_path / "docs"
    written = export_summaries(tmp_path / "runs", out)
    names = {p.relative_to(out).as_posix() for p in written}
    assert "es/seed0/eval/after.json" in names and "es/seed0/metrics.jsonl" in names
    assert not any(
        n.startswith("es/seed0/checkpoints") or "tensorboard" in n or n.endswith(".log") for n in names
    )
    for tag in ("before", "after"):
        original = read_outcomes(run / "eval" / f"{tag}_{TASK}_completions.jsonl")
        assert not (out / "es" / "seed0" / "eval" / f"{tag}_{TASK}_completions.jsonl").exists()
        kept = json.loads((out / "es" / "seed0" / "eval" / f"{tag}_{TASK}_counts.json").read_text())
        assert set(kept) == {"m", "problems", "counts", "greedy"} and kept["m"] == 32
        assert (
            evaluation_outcomes(out / "es" / "seed0" / "eval", tag, TASK) == original
        )  # ids, counts, M, greedy
        assert original.greedy == greedy_of(counts if tag == "before" else counts[::-1]).tolist()
    assert is_finished(out / "es" / "seed0")
    kept_curve = out / "analysis" / "es" / "seed0_thresholded" / "completions" / "counts-tau-0.001.json"
    assert json.loads(kept_curve.read_text())["counts"] == [1]
    assert not any(n.endswith("completions.jsonl") or "/completions-" in n for n in names)


def test_an_evaluation_is_read_from_its_counts_only_when_its_completions_are_absent(tmp_path):
    write_outcomes(tmp_path / "eval", "step-000005", np.array([3, 0, 2]), m=4, greedy=np.array([1, 0, 1]))
    (tmp_path / "eval" / "step-000005_counts.json").write_text(
        json.dumps({"m": 4, "problems": ["a", "b"], "counts": [4, 4], "greedy": None})
    )
    assert evaluation_outcomes(tmp_path / "eval", "step-000005", TASK).counts == [3, 0, 2]  # the completions
    (tmp_path / "eval" / f"step-000005_{TASK}_completions.jsonl").unlink()
    assert evaluation_outcomes(tmp_path / "eval", "step-000005", TASK) == Outcomes(["a", "b"], [4, 4], 4)
    for bad in ({"m": 4, "problems": ["a"], "counts": [1, 2]}, {"m": 0, "problems": [], "counts": []}, []):
        (tmp_path / "eval" / "step-000005_counts.json").write_text(json.dumps(bad))
        assert evaluation_outcomes(tmp_path / "eval", "step-000005", TASK) is None


def test_the_report_from_the_counts_is_the_report_from_the_completions(synthetic_report, tmp_path):
    """The synthetic report's runs, analyses and trajectory summarised (counts, no completions) and
    reported again: every block of report.json is the same."""
    export_summaries(synthetic_report["dir"], tmp_path / "kept")
    assert not list((tmp_path / "kept").rglob("*_completions.jsonl"))
    shutil.copytree(tmp_path / "kept", tmp_path / "again")
    again = run_report(
        methods={m: f"{m}.yaml" for m in PASS1},
        output_dir=tmp_path / "again",
        seeds=len(SEEDS),
        ablations=ABLATIONS,
        trajectory=TRAJECTORY,
        drift=DriftSettings(export_thresholded=[1e-4, 5e-4, 1e-3], evaluate="arithmetic"),
        launch=False,
    )
    assert_same_report(synthetic_report["report"], again)


def test_a_run_that_has_not_finished_is_left_out(tmp_path, capsys):
    rng = np.random.default_rng(1)
    done, running = tmp_path / "runs" / "es" / "seed0", tmp_path / "runs" / "grpo" / "seed0"
    for run in (done, running):
        write_single(run, summary(0.3, rng), summary(0.4, rng), [{"step": 1, "train/reward_mean": 0.3}])
    (running / "eval" / "after.json").unlink()  # still training: no final evaluation yet
    written = export_summaries(tmp_path / "runs", tmp_path / "docs")
    names = {p.relative_to(tmp_path / "docs").as_posix() for p in written}
    assert "es/seed0/eval/after.json" in names
    assert not any(n.startswith("grpo/") for n in names)
    assert "grpo/seed0: not finished, left out" in capsys.readouterr().err


def test_bad_arguments(tmp_path, capsys):
    assert main([]) == 2 and "usage" in capsys.readouterr().err
    with pytest.raises(FileNotFoundError, match="not a folder"):
        export_summaries(tmp_path / "absent", tmp_path / "out")
    (tmp_path / "src").mkdir()
    with pytest.raises(ValueError, match="outside"):
        export_summaries(tmp_path / "src", tmp_path / "src" / "copy")
