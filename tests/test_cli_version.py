"""``es-lightning --version``: the installed distribution's version, else the package's ``__version__``;
``--version`` and ``--help`` import no model library."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys

import pytest

import es_lightning
from es_lightning.cli import package_version
from tests.helpers import REPO, run_main, subprocess_env


def test_version_prints_the_release_and_exits_0(capsys):
    proc = run_main(capsys, "--version")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == f"es-lightning {importlib.metadata.version('es-lightning')}"


def test_the_package_version_is_pyprojects():
    declared = re.search(r'^version = "([^"]+)"$', (REPO / "pyproject.toml").read_text(), re.M)
    assert declared is not None and es_lightning.__version__ == declared.group(1)


def test_an_uninstalled_tree_falls_back_to_the_package_version(monkeypatch):
    def not_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    assert package_version() == es_lightning.__version__


@pytest.mark.integration
@pytest.mark.parametrize("argv", [["--version"], ["--help"], []])
def test_version_and_help_import_no_model_library(argv):
    """``es-lightning --version`` and ``--help`` (and a missing subcommand) build no subcommand's
    parser: torch, transformers, Lightning and vLLM stay unimported, so they answer at once (a
    fresh interpreter: this one has imported them all)."""
    script = (
        "import contextlib, io, sys\n"
        "from es_lightning.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        "    try:\n"
        f"        main({argv!r})\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(sorted(m for m in ('torch', 'transformers', 'lightning', 'vllm', 'numpy') if m in sys.modules))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], env=subprocess_env(), capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]"
