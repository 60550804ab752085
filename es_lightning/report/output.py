"""What a report writes into its ``output_dir``, and the command line that made it."""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any


def report_command() -> str | None:
    """The ``es-lightning ...`` command line when this process is one (for REPORT.md and TUNE.md)."""
    program = Path(sys.argv[0]) if sys.argv else Path()
    ours = program.name == "es-lightning" or (
        program.name == "__main__.py" and program.parent.name == "es_lightning"
    )
    return shlex.join(["es-lightning", *sys.argv[1:]]) if ours else None


def compact_json(text: str) -> str:
    """JSON with every list of plain numbers on one line (the per-problem counts stay readable)."""
    return re.sub(
        r"\[\s*(-?[\d.eE+-]+(?:,\s*-?[\d.eE+-]+)*)\s*\]",
        lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]",
        text,
    )


def write_report(report: dict[str, Any], output_dir: Path) -> Path:
    """Draw the figures, then write ``report.json`` and ``REPORT.md``; returns REPORT.md's path."""
    from es_lightning.report.figures import make_figures
    from es_lightning.report.markdown import render

    output_dir.mkdir(parents=True, exist_ok=True)
    report["figures"], report["skipped_figures"] = make_figures(report, output_dir)
    (output_dir / "report.json").write_text(compact_json(json.dumps(report, indent=2)))
    path = output_dir / "REPORT.md"
    path.write_text(render(report))
    return path
