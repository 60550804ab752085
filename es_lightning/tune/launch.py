"""Running the trials one after another, reusing the finished ones, and reading what each cost.

Each trial is launched by :func:`es_lightning.report.runs.execute` (the report's launcher: its own
process group, stdout and stderr in ``report_run.log``, stopped past ``timeout_s``) as
``python -m es_lightning.tune.measure tune_measure.json -- python -m es_lightning fit ...``, so its
wall-clock time and peak memory are recorded. A trial whose folder holds its final evaluation and
was made with the same resolved settings (``tune_trial_config.yaml``) is reused; one made with other
settings, and an unfinished or failed one, is run again.

Compute of a trial, from its ``metrics.jsonl`` (the strategies log ``time/step``,
``time/generate``, ``time/tokens_per_s`` = tokens / ``time/generate`` and ``train/response_len``
= mean tokens per response on every update)::

    generated_tokens = Σ_updates time/tokens_per_s · time/generate
    rollouts         = Σ_updates (that update's tokens) / train/response_len
    train_seconds    = Σ_updates time/step

(``None`` where an update did not log what is needed; evaluations are not included), plus
``wall_seconds`` and ``peak_rss_mb`` of the whole trial (evaluations and engine start included).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from es_lightning.report.readers import is_finished, read_json, read_series
from es_lightning.report.runs import RunOutcome, RunSpec, command_line, execute
from es_lightning.tune.config import Selection
from es_lightning.tune.selection import trial_point
from es_lightning.tune.trials import Trial

SETTINGS_NAME = "tune_trial_config.yaml"
"""The resolved settings a finished trial was made with."""
MEASURE_NAME = "tune_measure.json"
"""Wall-clock time, peak memory and exit status of a trial's process (:mod:`~es_lightning.tune.measure`)."""


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
            "compute": self.compute,
        }


def measured_command(spec: RunSpec) -> list[str]:
    """The trial's ``fit`` command, wrapped to record its wall-clock time and peak memory."""
    return [
        sys.executable,
        "-m",
        "es_lightning.tune.measure",
        str(spec.run_dir / MEASURE_NAME),
        "--",
        *command_line(spec),
    ]


def trial_compute(run_dir: Path) -> dict[str, float | None]:
    """Updates, rollouts, generated tokens and seconds of a finished trial (module docstring)."""
    series = {key: dict(values) for key, values in read_series(run_dir).items()}
    seconds = series.get("time/step", {})
    rate, generate = series.get("time/tokens_per_s", {}), series.get("time/generate", {})
    length = series.get("train/response_len", {})
    steps = sorted(seconds)
    tokens = {s: rate[s] * generate[s] for s in steps if s in rate and s in generate}
    complete = bool(steps) and len(tokens) == len(steps)
    measured = read_json(run_dir / MEASURE_NAME) or {}
    return {
        "updates": float(len(steps)),
        "rollouts": sum(tokens[s] / length[s] for s in steps)
        if complete and all(length.get(s) for s in steps)
        else None,
        "generated_tokens": sum(tokens.values()) if complete else None,
        "train_seconds": sum(seconds.values()) if steps else None,
        "wall_seconds": measured.get("wall_seconds"),
        "peak_rss_mb": measured.get("peak_rss_mb"),
    }


def computed_settings(settings: str) -> Any:
    """A trial's recorded settings less what does not change what it computes (the strategy keys
    of :data:`~es_lightning.training.resume.FREE_STRATEGY_KEYS`, e.g. when the no-signal warning
    is printed), so that a trial made before such a default changed is still reused."""
    import yaml

    from es_lightning.training.resume import FREE_STRATEGY_KEYS

    loaded = yaml.safe_load(settings)
    init_args = (loaded.get("strategy") or {}).get("init_args") if isinstance(loaded, dict) else None
    if isinstance(init_args, dict):
        for key in FREE_STRATEGY_KEYS:
            init_args.pop(key, None)
    return loaded


def _set_aside(run_dir: Path) -> Path:
    """Move a finished trial made with other settings out of the way (never deleted)."""
    n = 1
    while (aside := run_dir.with_name(f"{run_dir.name}.other-settings-{n}")).exists():
        n += 1
    run_dir.rename(aside)
    return aside


def run_trial(trial: Trial, launch: bool = True, timeout_s: float | None = None) -> TrialResult:
    """Reuse ``trial`` when it is finished with the same settings (up to settings that change
    nothing it computes, :func:`computed_settings`), else run it (``launch``). A finished trial made
    with other settings is set aside as ``<folder>.other-settings-<n>`` before the new run, and
    left in place when nothing is launched."""
    run_dir = trial.spec.run_dir
    recorded = run_dir / SETTINGS_NAME
    stale = (
        is_finished(run_dir)
        and recorded.is_file()
        and computed_settings(recorded.read_text()) != computed_settings(trial.settings)
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
    outcome: RunOutcome = execute(trial.spec, timeout_s, command=measured_command)
    print(f"[tune] {trial.spec.name}: {outcome.status} ({outcome.seconds:.0f} s)", flush=True)
    if not outcome.ok:
        return TrialResult(trial, "failed", error=outcome.error)
    recorded.write_text(trial.settings)
    return TrialResult(trial, outcome.status, compute=trial_compute(run_dir))
