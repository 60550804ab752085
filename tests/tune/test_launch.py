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


@pytest.mark.integration
def test_measure_records_peak_memory_and_passes_the_exit_status_on(tmp_path):
    out = tmp_path / "m.json"
    grow = (
        "b = bytearray(200 * 2**20); b[::4096] = b'x' * len(b[::4096]); raise SystemExit(3)"  # touch 200 MiB
    )
    code = subprocess.call(
        [sys.executable, "-m", "es_lightning.report.measure", str(out), "--", sys.executable, "-c", grow]
    )
    record = json.loads(out.read_text())
    assert code == 3 and record["returncode"] == 3
    assert 200 <= record["peak_rss_mb"] < 2000 and record["wall_seconds"] > 0


def _finished_trial(run_dir, recorded: str, settings: str):
    """A trial whose folder holds a final evaluation and the settings it was made with."""
    from es_lightning.report.runs import RunSpec
    from es_lightning.tune.grid import GridPoint
    from es_lightning.tune.launch import SETTINGS_NAME
    from es_lightning.tune.trials import Trial

    (run_dir / "eval").mkdir(parents=True)
    (run_dir / "eval" / "after.json").write_text(json.dumps({"t": {"pass@1": 0.5}}))
    (run_dir / SETTINGS_NAME).write_text(recorded)
    spec = RunSpec("es", "p", 0, "r.yaml", (), run_dir)
    return Trial("es", GridPoint((("strategy.init_args.sigma", 0.01),), "p"), spec, settings)


SETTINGS = (
    "strategy:\n  init_args:\n    sigma: 0.01\n    signal_window: {window}\ntrainer:\n  max_steps: 30\n"
)


def test_a_trial_differing_only_in_settings_that_change_nothing_is_reused(tmp_path):
    from es_lightning.tune.launch import run_trial

    trial = _finished_trial(tmp_path / "t", SETTINGS.format(window=10), SETTINGS.format(window=20))
    result = run_trial(trial, launch=False)
    assert result.status == "reused" and (tmp_path / "t" / "eval" / "after.json").is_file()


def test_a_trial_made_with_other_settings_is_never_deleted(tmp_path):
    from es_lightning.tune.launch import _set_aside, run_trial

    other = SETTINGS.format(window=20).replace("sigma: 0.01", "sigma: 0.003")
    trial = _finished_trial(tmp_path / "t", other, SETTINGS.format(window=20))
    result = run_trial(trial, launch=False)  # nothing launched: the old trial stays where it is
    assert result.status == "missing" and "other settings" in result.error
    assert (tmp_path / "t" / "eval" / "after.json").is_file()
    first, second = _set_aside(tmp_path / "t"), None  # before a new run: moved aside, numbered
    (tmp_path / "t").mkdir()
    second = _set_aside(tmp_path / "t")
    assert (first.name, second.name) == ("t.other-settings-1", "t.other-settings-2")
    assert (first / "eval" / "after.json").is_file()


def test_a_setting_added_since_the_trial_ran_is_not_compared(tmp_path):
    from es_lightning.tune.launch import run_trial, same_settings

    now = SETTINGS.format(window=20).replace("sigma: 0.01", "sigma: 0.01\n    antithetic_budget: rollouts")
    assert same_settings(SETTINGS.format(window=20), now)
    assert not same_settings(now, SETTINGS.format(window=20))  # a recorded setting gone is a change
    trial = _finished_trial(tmp_path / "t", SETTINGS.format(window=20), now)
    assert run_trial(trial, launch=False).status == "reused"
    changed = now.replace("sigma: 0.01", "sigma: 0.02")
    assert not same_settings(SETTINGS.format(window=20), changed)
