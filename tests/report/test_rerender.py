"""``--from_json``: a saved report judged again from its data alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from es_lightning.errors import ConfigError, MissingPathError
from es_lightning.report.command import report_parser
from es_lightning.report.config import VerdictSettings
from es_lightning.report.rerender import merged_verdicts, rerender
from es_lightning.report.verdicts import REPRODUCED

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = (
    ROOT / "tests" / "assets" / "report" / "coverage_cpu_2seeds.json"
)  # the 2-seed CPU report as first published
NEVER = [
    "ES covers more than GRPO at Pass@32 (matched Pass@1)",
    "ES keeps its entropy (against its permuted control)",
    "ES drifts further than GRPO (rel-L2)",
    "es_then_grpo is non-dominated by GRPO's trajectory (Pass@1 vs Pass@16)",
    "grpo_then_es is non-dominated by GRPO's trajectory (Pass@1 vs Pass@16)",
    "es_then_grpo is non-dominated by GRPO's trajectory (Pass@1 vs Pass@32)",
    "grpo_then_es is non-dominated by GRPO's trajectory (Pass@1 vs Pass@32)",
]


def test_the_committed_report_reproduces_none_of_the_null_passable_claims(tmp_path):
    report = rerender(COMMITTED, tmp_path)
    verdicts = {c["claim"]: c["verdict"] for c in report["claims"]}
    for name in NEVER:
        assert verdicts[name] != REPRODUCED and verdicts[name].startswith("insufficient data"), name
    # what the file lacks is named: per-problem outcomes, the permuted control, the trajectory, κ per update
    assert verdicts["GRPO raises Pass@1"] == "insufficient data: no per-problem outcomes"
    assert verdicts[NEVER[3]] == "insufficient data: no GRPO trajectory"
    assert verdicts["κ_pair kappa_pair/common_sigma1e-3 on the paper's side of 2"] == (
        "insufficient data: no per-update κ_pair"
    )
    saved = json.loads((tmp_path / "report.json").read_text())
    assert saved["source"]["from_json"] == str(COMMITTED)
    assert saved["evaluations"] == json.loads(COMMITTED.read_text())["evaluations"]  # data kept as they were
    text = (tmp_path / "REPORT.md").read_text()
    assert "Judged again from" in text
    reproduced = [line.split(" | ")[0] for line in text.splitlines() if "| **reproduced** |" in line]
    assert reproduced == ["| GRPO's token entropy falls"]  # seeds only: no outcomes needed
    assert (tmp_path / "pass_at_k.png").is_file()


def test_a_new_report_is_judged_the_same_again(synthetic_report, tmp_path):
    saved = synthetic_report["dir"] / "report.json"
    again = rerender(saved, tmp_path)
    first = json.loads(saved.read_text())
    assert [c["verdict"] for c in again["claims"]] == [c["verdict"] for c in first["claims"]]
    assert again["intervals"] == first["intervals"]


def test_settings_given_on_the_command_line_win():
    saved = {"level": 0.9, "pass_margin": 0.02}
    merged = merged_verdicts(saved, VerdictSettings(pass_margin=0.005))
    assert merged["level"] == 0.9 and merged["pass_margin"] == 0.005
    assert merged_verdicts(None, VerdictSettings())["level"] == 0.95


def test_bad_inputs(tmp_path):
    with pytest.raises(MissingPathError, match="does not exist"):
        rerender(tmp_path / "none.json", tmp_path / "out")
    (tmp_path / "x.json").write_text(json.dumps({"config": {}}))
    with pytest.raises(ConfigError, match="no evaluations"):
        rerender(tmp_path / "x.json", tmp_path / "out")
    with pytest.raises(ConfigError, match="other than"):
        rerender(COMMITTED, COMMITTED.parent)


def test_the_cli_takes_from_json_without_methods(tmp_path):
    parser = report_parser()
    cfg = parser.parse_args(["--from_json", str(COMMITTED), "--output_dir", str(tmp_path)])
    assert str(cfg.from_json) == str(COMMITTED) and cfg.methods is None
