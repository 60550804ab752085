"""Pre-registration: the rule code's fingerprint, the frozen block, and the report's check."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from es_lightning.report import preregistration as prereg
from es_lightning.report.markdown import _preregistration

RECIPE = "verdicts:\n  level: 0.95\n  primary_margin: 0.03\n  preregistration: PRE.md\n"


def test_the_code_hash_ignores_docstrings_and_comments_but_not_code(tmp_path):
    a = tmp_path / "a.py"
    a.write_text('"""Doc."""\n\ndef f(x):\n    """What f does."""\n    return x > 0  # a comment\n')
    first = prereg._code_hash(a)
    a.write_text('"""Other words."""\n\n\ndef f(x):\n    """Reworded."""\n    return x > 0\n')
    assert prereg._code_hash(a) == first
    a.write_text('"""Doc."""\n\ndef f(x):\n    """What f does."""\n    return x >= 0\n')
    assert prereg._code_hash(a) != first


def test_every_rule_module_is_fingerprinted():
    found = prereg.fingerprint()
    assert {"report/verdicts.py", "report/evidence.py", "report/claims/coverage.py"} <= set(found["modules"])
    assert len(found["rules_fingerprint"]) == 16 and found == prereg.fingerprint()


def _frozen(tmp_path: Path) -> Path:
    doc, recipe = tmp_path / "PRE.md", tmp_path / "study.yaml"
    doc.write_text("# A study\n\nRules in words.\n")
    recipe.write_text(RECIPE)
    block = prereg.freeze(doc, recipe, commit="abc1234")
    assert block["analysis_commit"] == "abc1234" and block["verdicts"]["primary_margin"] == 0.03
    return doc


def test_a_report_with_the_frozen_rules_is_pre_registered(tmp_path):
    doc = _frozen(tmp_path)
    prereg.freeze(doc, tmp_path / "study.yaml", commit="abc1234")  # freezing again replaces the block
    assert doc.read_text().count(prereg.MARKER) == 1
    found = prereg.check({"level": 0.95, "primary_margin": 0.03, "preregistration": str(doc)}, str(doc))
    assert found == {"status": "pre-registered", "document": str(doc), "commit": "abc1234", "differences": []}
    page = _page(found)
    assert "**Pre-registered.**" in page and "`abc1234`" in page


def test_other_margins_or_other_rule_code_are_not_pre_registered(tmp_path):
    doc = _frozen(tmp_path)
    found = prereg.check({"level": 0.95, "primary_margin": 0.02}, str(doc))
    assert found["status"] == "not pre-registered"
    assert found["differences"] == ["verdicts.primary_margin: 0.02 here, 0.03 frozen"]
    text = doc.read_text()
    block = prereg.read_frozen(doc)
    block["modules"]["report/verdicts.py"] = "0" * 16
    doc.write_text(
        text.split(prereg.MARKER)[0] + prereg.MARKER + "\n```json\n" + json.dumps(block) + "\n```\n"
    )
    found = prereg.check({"level": 0.95, "primary_margin": 0.03}, str(doc))
    assert found["differences"] == ["rule code report/verdicts.py differs"]
    assert "**Not pre-registered**: rule code report/verdicts.py differs." in _page(found)


def test_no_document_or_no_frozen_block_is_said(tmp_path):
    assert prereg.check({}, None)["differences"] == ["no pre-registration named"]
    assert prereg.check({}, str(tmp_path / "missing.md"))["differences"][0].endswith("not found")
    (tmp_path / "PRE.md").write_text("# words only\n")
    assert prereg.check({}, str(tmp_path / "PRE.md"))["differences"] == ["its rules are not frozen yet"]


def test_freeze_refuses_uncommitted_analysis_code(tmp_path, monkeypatch):
    from es_lightning.errors import ConfigError

    monkeypatch.setattr(prereg, "PACKAGE", tmp_path / "pkg")  # a package folder outside any repository
    (tmp_path / "pkg").mkdir()
    (tmp_path / "PRE.md").write_text("x\n")
    (tmp_path / "s.yaml").write_text(RECIPE)
    with pytest.raises((ConfigError, subprocess.CalledProcessError)):
        prereg.freeze(tmp_path / "PRE.md", tmp_path / "s.yaml")


def _page(found: dict) -> str:
    """The status line REPORT.md opens with."""
    return "\n".join(_preregistration({"preregistration": found}))
