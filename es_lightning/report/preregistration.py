"""Pre-registration: the rules a study is judged by, frozen before it runs, and the check.

:func:`freeze` ends a document with a JSON block of the analysis commit, ``rules_fingerprint`` (the
syntax trees of :data:`RULE_MODULES` without docstrings) and the recipe's ``verdicts:`` block; a
report is pre-registered only when both match (:func:`check`).
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from es_lightning.errors import ConfigError

PACKAGE = Path(__file__).resolve().parents[1]
RULE_MODULES = (
    "es/student_t.py",
    "report/bootstrap.py",
    "report/evidence.py",
    "report/intervals.py",
    "report/matched.py",
    "report/stats.py",
    "report/verdicts.py",
    *sorted(f"report/claims/{p.name}" for p in (PACKAGE / "report" / "claims").glob("*.py")),
)
"""The modules whose code decides verdicts, relative to the package."""
MARKER = "<!-- frozen rules: written by `python -m es_lightning.report.preregistration freeze` -->"
_BLOCK = re.compile(re.escape(MARKER) + r"\s*```json\n(?P<json>.*?)\n```", re.S)


def _code_hash(path: Path) -> str:
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            if isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]  # type: ignore[attr-defined]
    return hashlib.sha256(ast.dump(tree, annotate_fields=True).encode()).hexdigest()[:16]


def fingerprint() -> dict[str, Any]:
    """``{"rules_fingerprint", "modules": {module: hash}}`` of the installed rule code."""
    modules = {name: _code_hash(PACKAGE / name) for name in RULE_MODULES}
    combined = hashlib.sha256(json.dumps(modules, sort_keys=True).encode()).hexdigest()[:16]
    return {"rules_fingerprint": combined, "modules": modules}


def read_frozen(document: Path) -> dict[str, Any] | None:
    """The frozen block of a pre-registration document (``None``: not frozen yet)."""
    match = _BLOCK.search(Path(document).read_text())
    return None if match is None else json.loads(match["json"])


def check(verdicts: dict[str, Any], document: str | None) -> dict[str, Any]:
    """Whether ``verdicts`` and the installed rule code match the frozen rules of ``document``."""
    if not document:
        return _not_registered(None, "no pre-registration named")
    path = Path(document)
    if not path.is_file():
        return _not_registered(document, f"{document} not found")
    frozen = read_frozen(path)
    if frozen is None:
        return _not_registered(document, "its rules are not frozen yet")
    now = fingerprint()
    differences = [
        f"rule code {name} differs"
        for name in sorted(set(frozen["modules"]) | set(now["modules"]))
        if frozen["modules"].get(name) != now["modules"].get(name)
    ]
    mine = _comparable(verdicts)
    theirs = _comparable(frozen.get("verdicts") or {})
    differences += [
        f"verdicts.{k}: {mine.get(k)!r} here, {theirs.get(k)!r} frozen"
        for k in sorted(set(mine) | set(theirs))
        if mine.get(k) != theirs.get(k)
    ]
    status = "pre-registered" if not differences else "not pre-registered"
    return {
        "status": status,
        "document": document,
        "commit": frozen.get("analysis_commit"),
        "differences": differences,
    }


def _not_registered(document: str | None, why: str) -> dict[str, Any]:
    return {"status": "not pre-registered", "document": document, "differences": [why]}


def _comparable(verdicts: dict[str, Any]) -> dict[str, Any]:
    from es_lightning.report.config import VerdictSettings

    known = {k: v for k, v in verdicts.items() if k in VerdictSettings.__dataclass_fields__}
    return {k: v for k, v in asdict(VerdictSettings(**known)).items() if k != "preregistration"}


def freeze(document: Path, recipe: Path, commit: str | None = None) -> dict[str, Any]:
    """Write the frozen block at the end of ``document``; ``commit`` defaults to a clean ``HEAD``."""
    import yaml

    verdicts = (yaml.safe_load(Path(recipe).read_text()) or {}).get("verdicts") or {}
    if commit is None:
        repo = ["git", "-C", str(PACKAGE.parent)]
        dirty = subprocess.run(
            [*repo, "status", "--porcelain", "--", str(PACKAGE)], capture_output=True, text=True, check=True
        )
        if dirty.stdout.strip():
            raise ConfigError(
                f"freeze: commit the analysis code first; uncommitted under {PACKAGE}:\n{dirty.stdout}"
            )
        commit = subprocess.run(
            [*repo, "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    block = {"analysis_commit": commit, **fingerprint(), "verdicts": _comparable(verdicts)}
    text = Path(document).read_text()
    body = f"{MARKER}\n```json\n{json.dumps(block, indent=2, sort_keys=True)}\n```"
    text = (
        _BLOCK.sub(lambda _: body, text) if _BLOCK.search(text) else text.rstrip("\n") + "\n\n" + body + "\n"
    )
    Path(document).write_text(text)
    return block


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "freeze":
        sys.exit("usage: python -m es_lightning.report.preregistration freeze DOCUMENT REPORT_RECIPE")
    print(json.dumps(freeze(Path(sys.argv[2]), Path(sys.argv[3])), indent=2))
