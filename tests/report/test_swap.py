"""A method that did nothing passes no ES claim: ES's runs replaced by its permuted control's.

The committed run summaries are copied, the data of every ES run (full-rank ES and each ES variant,
in the main and the forgetting setting: metrics, evaluations, held-out curves and analyses) is
replaced by the permuted-reward control's of the same seed (its recorded configuration kept, so
the report takes it for ES's run), and ``es-lightning report --launch false`` judges the copy.
No claim in ES's favour may then read "reproduced".
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
STUDIES = [
    (("results/report_cpu_v2", "docs/report/cpu"), "recipes/report_cpu.yaml"),
    (("results/study_cpu",), "recipes/report_study_cpu.yaml"),
    (("results/study_arith40",), "recipes/report_study_arith40.yaml"),
]
KEEP = {"config.yaml", "report_run_config.yaml", "report_run_attempt.yaml"}
"""What makes a run folder the run the report asks for: kept from ES's own run."""
CONTROL = "es_permuted"
ES_METHODS = ("es", "es_lowrank")


def _pairs(folder: Path) -> int:
    """How many seeds have both a finished ES run and a finished control run in ``folder``."""
    done = {
        method: {
            run.name
            for run in (folder / "runs" / method).glob("seed*")
            if (run / "eval" / "after.json").is_file()
        }
        for method in ("es", CONTROL)
    }
    return len(done["es"] & done[CONTROL])


def _found() -> list[tuple[Path, str]]:
    """The committed summaries with ES and its control finished on at least 3 seeds (a study still
    running is judged once it has them), and their report recipe."""
    out = []
    for folders, recipe in STUDIES:
        for folder in (ROOT / f for f in folders):
            if _pairs(folder) >= 3:
                out.append((folder, recipe))
                break
    return out


def _replace(target: Path, source: Path) -> None:
    """``target``'s data files become ``source``'s (recorded configuration kept)."""
    for path in sorted(target.rglob("*")):
        if path.is_file() and path.name not in KEEP:
            path.unlink()
    for path in sorted(source.rglob("*")):
        if path.is_file() and path.name not in KEEP:
            dest = target / path.relative_to(source)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest)


def swap(out: Path) -> int:
    """Every ES run's data replaced by the control's of the same seed; how many runs were swapped."""
    swapped = 0
    for group in (out / "runs", out / "runs" / "forgetting"):
        control = group / CONTROL
        for method in ES_METHODS:
            for run in sorted((group / method).glob("seed*")) if control.is_dir() else []:
                if (control / run.name).is_dir():
                    _replace(run, control / run.name)
                    swapped += 1
    for method in ES_METHODS:
        for analysis in sorted((out / "analysis" / method).glob("seed*")):
            twin = out / "analysis" / CONTROL / analysis.name
            if analysis.is_dir() and twin.is_dir():
                shutil.rmtree(analysis)
                shutil.copytree(twin, analysis)
            elif twin.is_file():
                shutil.copy2(twin, analysis)
    return swapped


@pytest.mark.parametrize("summaries,recipe", _found(), ids=lambda x: str(x).rsplit("/", 1)[-1])
def test_es_replaced_by_its_permuted_control_reproduces_nothing_in_es_favour(tmp_path, summaries, recipe):
    out = tmp_path / "swapped"
    shutil.copytree(summaries, out)
    assert swap(out) >= 3
    argv = [
        sys.executable,
        "-m",
        "es_lightning",
        "report",
        "--config",
        recipe,
        "--output_dir",
        str(out),
        "--launch",
        "false",
    ]
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    report = json.loads((out / "report.json").read_text())
    counts = report["outcomes"]["counts"]
    assert counts["es"] == counts[CONTROL]  # the swap took effect
    assert report["premise"]["verdict"].startswith("vacuous")
    for claim in report["claims"]:
        about_es = claim["claim"].startswith(("ES", "es_")) or claim["paper"].startswith("ES's claim")
        if about_es:
            assert claim["verdict"] != "reproduced", claim
