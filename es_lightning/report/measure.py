"""Run a command and record its wall-clock time and peak memory: ``python -m es_lightning.report.measure
OUT.json -- COMMAND...``. Each attempt is a segment; a heartbeat keeps a killed attempt counted.
"""

from __future__ import annotations

import json
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HEARTBEAT_S = 30.0
"""How often a running segment's wall-clock time is written."""


def earlier_segments(out: Path) -> list[dict[str, Any]]:
    """The segments an earlier attempt recorded in ``out``."""
    try:
        data = json.loads(out.read_text())
    except (OSError, ValueError):
        return []
    if not isinstance(data, dict):
        return []
    segments = data.get("segments")
    if isinstance(segments, list):
        return [s for s in segments if isinstance(s, dict)]
    return [{k: data.get(k) for k in ("wall_seconds", "peak_rss_mb", "returncode")}]


def totals(segments: list[dict[str, Any]]) -> dict[str, Any]:
    """The record of ``segments``: seconds summed, the largest peak, the last return code."""
    walls = [s["wall_seconds"] for s in segments if s.get("wall_seconds") is not None]
    peaks = [s["peak_rss_mb"] for s in segments if s.get("peak_rss_mb") is not None]
    return {
        "wall_seconds": round(sum(walls), 3) if walls else None,
        "peak_rss_mb": max(peaks) if peaks else None,
        "returncode": segments[-1].get("returncode") if segments else None,
        "segments": segments,
    }


def _write(out: Path, segments: list[dict[str, Any]]) -> None:
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(totals(segments), indent=2))
    tmp.replace(out)


def measured(argv: list[str], out: Path, heartbeat_s: float = HEARTBEAT_S) -> int:
    """Run ``argv`` (output inherited), record it as a new segment of ``out``; its exit status."""
    earlier = earlier_segments(out)
    start = time.perf_counter()
    segment: dict[str, Any] = {"wall_seconds": 0.0, "peak_rss_mb": None, "returncode": None}
    _write(out, [*earlier, segment])
    proc = subprocess.Popen(argv)
    for sig in (signal.SIGTERM, signal.SIGINT):  # the run's process group signals the command too:
        signal.signal(sig, signal.SIG_IGN)  # wait for it to stop in its own way, then record it
    while True:
        try:
            returncode = proc.wait(timeout=heartbeat_s)
            break
        except subprocess.TimeoutExpired:
            segment["wall_seconds"] = round(time.perf_counter() - start, 3)
            _write(out, [*earlier, segment])
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    segment = {
        "wall_seconds": round(time.perf_counter() - start, 3),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),  # Linux: KiB
        "returncode": returncode,
    }
    _write(out, [*earlier, segment])
    return returncode


def main(args: list[str]) -> int:
    if len(args) < 3 or args[1] != "--":
        print("usage: python -m es_lightning.report.measure OUT.json -- COMMAND...", file=sys.stderr)
        return 2
    return measured(args[2:], Path(args[0]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
