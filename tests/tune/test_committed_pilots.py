"""results/pilot*/TUNE.md is what the committed trial summaries give today: the tune re-reads each
finished trial (nothing is trained) and writes the same page."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PILOTS = {
    "pilot_cpu": "recipes/tune_pilot_cpu.yaml",
    "pilot2_cpu": "recipes/tune_pilot2_cpu.yaml",
    "pilot_arith40_es": "recipes/tune_pilot_arith40_es.yaml",
    "pilot_arith40_grpo": "recipes/tune_pilot_arith40_grpo.yaml",
}


@pytest.mark.parametrize("name", [n for n in PILOTS if (ROOT / "results" / n / "TUNE.md").is_file()])
def test_committed_pilot_is_what_its_summaries_rebuild(name: str, tmp_path: Path):
    out = tmp_path / name
    shutil.copytree(ROOT / "results" / name, out)
    assert not list(out.rglob("*_completions.jsonl"))  # per-problem counts only
    (out / "TUNE.md").unlink()
    argv = [sys.executable, "-m", "es_lightning", "tune", "--config", PILOTS[name], "--output_dir", str(out)]
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "running" not in proc.stdout + proc.stderr  # every trial reused, none trained
    rebuilt = (out / "TUNE.md").read_text().replace(str(out), f"runs/{name}")
    assert rebuilt == (ROOT / "results" / name / "TUNE.md").read_text()
