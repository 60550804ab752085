"""Compute per method from metrics.jsonl: hand-worked totals, and "not recorded" when absent."""

from __future__ import annotations

import json
import sys

import pytest

from es_lightning.report.compute import collect_compute, run_compute


def _write(run_dir, records):
    run_dir.mkdir(parents=True)
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def test_totals_by_hand(tmp_path):
    _write(
        tmp_path / "a",
        [
            {"step": 0, "eval/x/pass@1": 0.5},  # an evaluation line: no update
            {
                "step": 1,
                "time/step": 2.0,
                "time/generate": 1.5,
                "time/tokens_per_s": 400.0,
                "train/response_len": 10.0,
            },
            {
                "step": 2,
                "time/step": 3.0,
                "time/generate": 2.0,
                "time/tokens_per_s": 100.0,
                "train/response_len": 20.0,
            },
        ],
    )
    got = run_compute(tmp_path / "a")
    assert got["updates"] == 2 and got["train_seconds"] == pytest.approx(5.0)
    assert got["generated_tokens"] == pytest.approx(400 * 1.5 + 100 * 2.0)  # 600 + 200
    assert got["rollouts"] == pytest.approx(600 / 10 + 200 / 20)  # 60 + 10


def test_not_recorded(tmp_path):
    _write(tmp_path / "b", [{"step": 1, "time/step": 2.0}])
    got = run_compute(tmp_path / "b")
    assert got["updates"] == 1 and got["generated_tokens"] is None and got["rollouts"] is None
    summary = collect_compute({"m": {0: tmp_path / "b"}})
    assert summary["m"]["train_seconds"]["mean"] == 2.0 and summary["m"]["rollouts"] is None
    assert got["wall_seconds"] is None and got["peak_rss_mb"] is None  # not measured


@pytest.mark.integration
def test_a_measured_run_records_its_wall_clock_and_peak_memory(tmp_path):
    import sys

    from es_lightning.report.runs import MEASURE_NAME, RunSpec, measured_command

    run_dir = tmp_path / "c"
    _write(run_dir, [{"step": 1, "time/step": 2.0}])
    spec = RunSpec("m", None, 0, "r.yaml", (), run_dir)
    argv = measured_command(spec)
    assert argv[:3] == [sys.executable, "-m", "es_lightning.report.measure"] and argv[4] == "--"
    grow = "x = bytearray(300 * 2**20); x[::4096] = b'1' * len(x[::4096])"  # touch 300 MiB
    import subprocess

    code = subprocess.call([*argv[:5], sys.executable, "-c", grow])
    assert code == 0
    got = run_compute(run_dir)
    assert got["peak_rss_mb"] > 300 and got["wall_seconds"] > 0
    assert (run_dir / MEASURE_NAME).is_file()


@pytest.mark.integration
def test_a_run_in_several_attempts_sums_its_wall_clock_and_keeps_its_largest_peak(tmp_path):
    """Segments: an earlier record (the format from before segments, then a killed attempt that
    only reached a heartbeat) and a new attempt; totals by hand."""
    from es_lightning.report.measure import earlier_segments, measured, totals

    out = tmp_path / "measure.json"
    out.write_text(json.dumps({"wall_seconds": 10.0, "peak_rss_mb": 300.0, "returncode": -9}))
    assert earlier_segments(out) == [{"wall_seconds": 10.0, "peak_rss_mb": 300.0, "returncode": -9}]
    killed = {"wall_seconds": 5.5, "peak_rss_mb": None, "returncode": None}
    out.write_text(json.dumps(totals([*earlier_segments(out), killed])))
    assert measured([sys.executable, "-c", "import time; time.sleep(0.3)"], out, heartbeat_s=0.1) == 0
    record = json.loads(out.read_text())
    assert [s["returncode"] for s in record["segments"]] == [-9, None, 0]
    last = record["segments"][-1]
    assert 0.3 <= last["wall_seconds"] < 10 and last["peak_rss_mb"] > 0
    assert record["wall_seconds"] == pytest.approx(10.0 + 5.5 + last["wall_seconds"], abs=1e-3)
    assert record["peak_rss_mb"] == max(300.0, last["peak_rss_mb"]) and record["returncode"] == 0
    assert totals([]) == {"wall_seconds": None, "peak_rss_mb": None, "returncode": None, "segments": []}
