"""Pyright (basic mode) finds no error in the strategies and the algorithms' packages.

The checked paths are ``[tool.pyright]`` in pyproject.toml (every file under them, none
excluded); pyright comes with the ``dev`` extra (``pip install -e ".[dev]"``, with a bundled Node.js).
"""

import json
import shutil
import subprocess
import sys

import pytest

from tests.helpers import REPO

pytestmark = pytest.mark.integration


def _pyright() -> list[str]:
    try:
        import pyright  # noqa: F401
    except ImportError:
        if shutil.which("pyright") is None:
            pytest.skip('pyright is not installed (pip install -e ".[dev]")')
        return ["pyright"]
    return [sys.executable, "-m", "pyright"]


def test_pyright_reports_no_errors():
    done = subprocess.run(
        [*_pyright(), "--outputjson", "--pythonpath", sys.executable],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = json.loads(done.stdout)
    errors = [
        f"{d['file'].removeprefix(str(REPO) + '/')}:{d['range']['start']['line'] + 1}: {d['message']}"
        for d in report["generalDiagnostics"]
        if d["severity"] == "error"
    ]
    assert report["summary"]["filesAnalyzed"] > 0
    assert errors == [], "\n".join(errors)
