"""Running the trials one after another, measured, reusing the finished ones with the same settings."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from es_lightning.report.compute import run_compute
from es_lightning.report.readers import is_finished
from es_lightning.report.runs import RunOutcome, execute, measured_command
from es_lightning.report.same_run import same_settings
from es_lightning.tune.config import Selection
from es_lightning.tune.selection import trial_outcomes, trial_point
from es_lightning.tune.trials import Trial

SETTINGS_NAME = "tune_trial_config.yaml"
"""The resolved settings a finished trial was made with."""
MEASURE_NAME = "tune_measure.json"
"""Wall-clock time, peak memory and exit status of a trial's process (:mod:`~es_lightning.report.measure`)."""


@dataclass
class TrialResult:
    """A trial and what came of it."""

    trial: Trial
    status: str
    """``finished``, ``reused``, ``failed`` or ``missing`` (not launched)."""
    error: str | None = None
    compute: dict[str, float | None] = field(default_factory=dict)

    def to_json(self, selection: Selection) -> dict[str, Any]:
        """The trial's record in ``tune.json``, with the selection metric before and after."""
        spec = self.trial.spec
        point = trial_point(spec.run_dir, selection) if self.status in ("finished", "reused") else None
        return {
            "method": self.trial.method,
            "label": self.trial.point.label,
            "settings": dict(self.trial.point.settings),
            "seed": spec.seed,
            "run_dir": str(spec.run_dir),
            "status": self.status,
            "error": self.error,
            "before": None if point is None else point.before,
            "after": None if point is None else point.after,
            "delta": None if point is None else point.delta,
            "outcomes": None if point is None else trial_outcomes(spec.run_dir, selection.task),
            "compute": self.compute,
        }


def trial_compute(run_dir: Path) -> dict[str, float | None]:
    """What a finished trial spent, as the report reads a run's."""
    return run_compute(run_dir, MEASURE_NAME)


def _set_aside(run_dir: Path) -> Path:
    """Move a finished trial made with other settings out of the way (never deleted)."""
    n = 1
    while (aside := run_dir.with_name(f"{run_dir.name}.other-settings-{n}")).exists():
        n += 1
    run_dir.rename(aside)
    return aside


def run_trial(trial: Trial, launch: bool = True, timeout_s: float | None = None) -> TrialResult:
    """Reuse ``trial`` when finished with the same settings, else run it (``launch``)."""
    run_dir = trial.spec.run_dir
    recorded = run_dir / SETTINGS_NAME
    stale = (
        is_finished(run_dir)
        and recorded.is_file()
        and not same_settings(recorded.read_text(), trial.settings)
    )
    if stale and not launch:
        return TrialResult(trial, "missing", error="made with other settings (launch: false leaves it)")
    if stale:
        aside = _set_aside(run_dir)
        print(
            f"[tune] {trial.spec.name}: made with other settings; kept in {aside}, running it again",
            flush=True,
        )
    if is_finished(run_dir):
        return TrialResult(trial, "reused", compute=trial_compute(run_dir))
    if not launch:
        return TrialResult(trial, "missing", error="not run (launch: false)")
    print(f"[tune] running {trial.spec.name} -> {run_dir}", flush=True)
    outcome: RunOutcome = execute(trial.spec, timeout_s, command=partial(measured_command, name=MEASURE_NAME))
    print(f"[tune] {trial.spec.name}: {outcome.status} ({outcome.seconds:.0f} s)", flush=True)
    if not outcome.ok:
        return TrialResult(trial, "failed", error=outcome.error)
    recorded.write_text(trial.settings)
    return TrialResult(trial, outcome.status, compute=trial_compute(run_dir))
