"""Run a command and record its wall-clock time and peak memory: ``python -m es_lightning.report.measure
OUT.json -- COMMAND...``.

Writes ``OUT.json`` with ``wall_seconds``, ``peak_rss_mb`` (the largest resident set of the command
and of every process it waited for, e.g. its rollout engines: ``getrusage(RUSAGE_CHILDREN)``, in
MiB) and ``returncode``, then exits with the command's status. The report launches each run and
the tune each trial through it, so a run's memory is measured whatever the run itself logs.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path


def measured(argv: list[str], out: Path) -> int:
    """Run ``argv`` (output inherited), write ``out``; the command's exit status."""
    start = time.perf_counter()
    returncode = subprocess.call(argv)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    record = {
        "wall_seconds": round(time.perf_counter() - start, 3),
        "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),  # Linux: KiB
        "returncode": returncode,
    }
    out.write_text(json.dumps(record, indent=2))
    return returncode


def main(args: list[str]) -> int:
    if len(args) < 3 or args[1] != "--":
        print("usage: python -m es_lightning.report.measure OUT.json -- COMMAND...", file=sys.stderr)
        return 2
    return measured(args[2:], Path(args[0]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
