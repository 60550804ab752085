"""What each method spent: updates, rollouts, generated tokens, seconds, wall-clock and memory.

Per update: tokens = time/tokens_per_s · time/generate, rollouts = tokens / train/response_len;
wall-clock and memory are the whole process's (:mod:`~es_lightning.report.measure`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from es_lightning.report.readers import read_json, read_series
from es_lightning.report.runs import MEASURE_NAME
from es_lightning.report.stats import stat, stat_json

FIELDS = ("updates", "rollouts", "generated_tokens", "train_seconds", "wall_seconds", "peak_rss_mb")


def run_compute(run_dir: Path, measure_name: str = MEASURE_NAME) -> dict[str, float | None]:
    """Totals over the run's updates, with its measured wall-clock and peak memory."""
    series = read_series(run_dir)
    seconds, rate, generate, length = (
        dict(series.get(key, []))
        for key in ("time/step", "time/tokens_per_s", "time/generate", "train/response_len")
    )
    steps = sorted(seconds)
    out: dict[str, float | None] = {"updates": float(len(steps)) if steps else None}
    out["train_seconds"] = sum(seconds.values()) if steps else None
    has_tokens = steps and all(s in rate and s in generate for s in steps)
    tokens = {s: rate[s] * generate[s] for s in steps} if has_tokens else {}
    out["generated_tokens"] = sum(tokens.values()) if has_tokens else None
    has_rollouts = has_tokens and all(length.get(s) for s in steps)
    out["rollouts"] = sum(tokens[s] / length[s] for s in steps) if has_rollouts else None
    measured = read_json(Path(run_dir) / measure_name)  # None each when not recorded
    measured = measured if isinstance(measured, dict) else {}
    return {**out, **{k: measured.get(k) for k in ("wall_seconds", "peak_rss_mb")}}


def collect_compute(methods: dict[str, dict[int, Path]]) -> dict[str, dict[str, Any]]:
    """``{method: {field: Stat over seeds, or None when some seed did not record it}}``."""
    out: dict[str, dict[str, Any]] = {}
    for method, dirs in methods.items():
        runs = {seed: run_compute(d) for seed, d in dirs.items()}
        out[method] = {}
        for name in FIELDS:
            values = {s: r[name] for s, r in runs.items() if r[name] is not None}
            out[method][name] = stat_json(stat(values)) if values and len(values) == len(runs) else None
    return out
