"""docs/report/REPORT.md is what the committed run summaries rebuild with today's rules: nothing in
it is edited by hand, and a change of the rules or numbers shows here until the page is written
again (docs/report.md says how)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _body(text: str) -> list[str]:
    """REPORT.md without its ``Command:`` line (the output folder differs)."""
    return [line for line in text.splitlines() if not line.startswith("Command: ")]


def test_the_committed_report_is_what_its_summaries_rebuild(tmp_path):
    out = tmp_path / "report_study_cpu"
    shutil.copytree(ROOT / "results" / "study_cpu", out)
    assert not list(out.rglob("*_completions.jsonl"))  # per-problem counts only
    argv = [sys.executable, "-m", "es_lightning", "report", "--config", "recipes/report_study_cpu.yaml"]
    argv += ["--output_dir", str(out), "--launch", "false"]
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rebuilt = _body((out / "REPORT.md").read_text())
    committed = _body((ROOT / "docs" / "report" / "REPORT.md").read_text())
    assert rebuilt == committed
    # every run of the study is in; the pre-registered study configured no ablations
    assert "**Pre-registered.**" in committed[2]
    insufficient = [line.split(" | ")[0] for line in committed if "**insufficient data" in line]
    assert insufficient == [
        "| A larger population reaches a higher reward",
        "| z-score normalisation matters",
        "| One-point beats antithetic",
    ]
    assert all(
        "**insufficient data: not run**" in line for line in committed if "**insufficient data" in line
    )
