"""Summaries kept in git: the files the report reads, sample texts stripped, the same outcomes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from es_lightning.report.outcomes import read_outcomes
from es_lightning.report.readers import is_finished
from es_lightning.report.summaries import export_summaries, main
from tests.report.synthetic import TASK, summary, write_single


def test_a_run_folder_is_summarised_without_weights_and_reads_the_same(tmp_path):
    rng = np.random.default_rng(0)
    run = tmp_path / "runs" / "es" / "seed0"
    counts = rng.integers(0, 33, size=50)
    write_single(run, summary(0.3, rng), summary(0.4, rng), [{"step": 1, "train/reward_mean": 0.3}],
                 before_counts=counts, after_counts=counts[::-1].copy())  # fmt: skip
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
        name = f"{tag}_{TASK}_completions.jsonl"
        original = read_outcomes(run / "eval" / name)
        kept = read_outcomes(out / "es" / "seed0" / "eval" / name)
        assert kept == original  # same problem ids, counts and M
        row = json.loads((out / "es" / "seed0" / "eval" / name).read_text().splitlines()[0])
        assert "completions" not in row and len(row["rewards"]) == 32
    assert is_finished(out / "es" / "seed0")
    kept_curve = out / "analysis" / "es" / "seed0_thresholded" / "completions" / "completions-tau-0.001.jsonl"
    assert json.loads(kept_curve.read_text()) == {"target": 2, "rewards": [1.0]}


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
