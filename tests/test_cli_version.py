"""``es-lightning --version``: the installed distribution's version, else the package's ``__version__``."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess

import es_lightning
from es_lightning.cli import package_version
from tests.helpers import CLI, REPO, subprocess_env


def test_version_prints_the_release_and_exits_0():
    proc = subprocess.run(
        [*CLI, "--version"], env=subprocess_env(), capture_output=True, text=True, timeout=120
    )
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
