"""``es-lightning report --from_json OLD/report.json``: judge a saved report again with today's
rules, run nothing; a verdict whose data the old report lacks says ``insufficient data``."""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from es_lightning.errors import ConfigError, MissingPathError
from es_lightning.report.config import TrajectorySettings, VerdictSettings

STALE = ("claims", "intervals", "premise", "figures", "skipped_figures")
"""What is recomputed rather than kept."""


def load_saved(path: Path) -> dict[str, Any]:
    """The saved report, checked for the blocks every report has."""
    if not path.is_file():
        raise MissingPathError(f"report --from_json: {str(path)!r} does not exist")
    try:
        report = json.loads(path.read_text())
    except ValueError as err:
        raise ConfigError(f"report --from_json: {path} is not valid JSON ({err})") from err
    missing = [k for k in ("config", "evaluations") if not isinstance(report, dict) or k not in report]
    if missing:
        raise ConfigError(f"report --from_json: {path} is not a report.json (no {', '.join(missing)})")
    return report


def merged_verdicts(saved: dict[str, Any] | None, given: VerdictSettings) -> dict[str, Any]:
    """The saved ``verdicts:`` block with the command line's non-default values on top."""
    default = VerdictSettings()
    known = {f.name for f in fields(VerdictSettings)}
    out = {**asdict(default), **{k: v for k, v in (saved or {}).items() if k in known}}
    out.update({k: v for k, v in asdict(given).items() if v != getattr(default, k)})
    VerdictSettings(**out)  # validates
    return out


def rerender(path: Path, output_dir: Path, verdicts: VerdictSettings | None = None) -> dict[str, Any]:
    """Judge the report saved at ``path`` again and write it into ``output_dir``; returns it."""
    from es_lightning.report.claims import judge
    from es_lightning.report.output import report_command, write_report

    report = load_saved(path)
    if Path(output_dir).resolve() == path.parent.resolve():
        raise ConfigError("report --from_json: give an --output_dir other than the saved report's folder")
    for key in STALE:
        report.pop(key, None)
    config = report["config"]
    config["verdicts"] = merged_verdicts(config.get("verdicts"), verdicts or VerdictSettings())
    config.setdefault("trajectory", asdict(TrajectorySettings()))
    report["source"] = {"from_json": str(path), "command": report.get("command")}
    report["command"] = report_command()
    empty = {
        "curves": {"entropy": {}, "entropy_change": {}, "heldout": {}, "heldout_final": {}},
        "drift": {"methods": {}, "ratio": None, "taus": []},
        "ablations": {},
        "pareto": {},
        "runs": [],
        "failures": [],
    }
    for key, value in empty.items():
        report.setdefault(key, value)
    report.update(judge(report))
    written = write_report(report, Path(output_dir))
    print(f"[report] judged {path} again: {written}", flush=True)
    return report


__all__ = ["rerender", "load_saved", "merged_verdicts"]
