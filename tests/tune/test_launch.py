"""What a trial cost: compute from its metrics, wall-clock time and peak memory from its process."""

import json
import subprocess
import sys

import pytest

from es_lightning.tune.launch import MEASURE_NAME, trial_compute


def test_compute_from_the_metrics_the_strategies_log(tmp_path):
    lines = [
        {"step": 0, "eval/arithmetic/pass@1": 0.5},  # the evaluation before: not an update
        {
            "step": 1,
            "time/step": 2.0,
            "time/generate": 1.5,
            "time/tokens_per_s": 400.0,
            "train/response_len": 20.0,
        },
        {
            "step": 2,
            "time/step": 3.0,
            "time/generate": 2.0,
            "time/tokens_per_s": 250.0,
            "train/response_len": 25.0,
        },
    ]
    (tmp_path / "metrics.jsonl").write_text("\n".join(json.dumps(line) for line in lines))
    (tmp_path / MEASURE_NAME).write_text(
        json.dumps({"wall_seconds": 30.5, "peak_rss_mb": 612.0, "returncode": 0})
    )
    compute = trial_compute(tmp_path)
    # tokens: 400 * 1.5 = 600 and 250 * 2 = 500; rollouts: 600 / 20 = 30 and 500 / 25 = 20
    assert compute == {
        "updates": 2.0,
        "rollouts": pytest.approx(50.0),
        "generated_tokens": pytest.approx(1100.0),
        "train_seconds": 5.0,
        "wall_seconds": 30.5,
        "peak_rss_mb": 612.0,
    }


def test_compute_not_logged_is_none(tmp_path):
    (tmp_path / "metrics.jsonl").write_text(json.dumps({"step": 1, "time/step": 2.0}))
    compute = trial_compute(tmp_path)
    assert compute["updates"] == 1.0 and compute["train_seconds"] == 2.0
    assert (
        compute["rollouts"] is None and compute["generated_tokens"] is None and compute["peak_rss_mb"] is None
    )


def test_measure_records_peak_memory_and_passes_the_exit_status_on(tmp_path):
    out = tmp_path / "m.json"
    grow = (
        "b = bytearray(200 * 2**20); b[::4096] = b'x' * len(b[::4096]); raise SystemExit(3)"  # touch 200 MiB
    )
    code = subprocess.call(
        [sys.executable, "-m", "es_lightning.tune.measure", str(out), "--", sys.executable, "-c", grow]
    )
    record = json.loads(out.read_text())
    assert code == 3 and record["returncode"] == 3
    assert 200 <= record["peak_rss_mb"] < 2000 and record["wall_seconds"] > 0
