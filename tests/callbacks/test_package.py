"""The package the top-level callbacks/ folder installs (es_lightning.callbacks): class paths, installation."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

from es_lightning.callbacks import Callback
from tests.helpers import REPO


def test_built_in_callbacks_resolve_by_class_path():
    from jsonargparse import ArgumentParser

    parser = ArgumentParser()
    parser.add_argument("--callbacks", type=list[Callback])
    cfg = parser.parse_args(
        [
            "--callbacks",
            '[{"class_path": "es_lightning.callbacks.PopulationDiversity"}, '
            '{"class_path": "es_lightning.callbacks.ParameterDrift", "init_args": {"every_n_updates": 3}}]',
        ]
    )
    objs = parser.instantiate(cfg).callbacks
    assert [type(o).__name__ for o in objs] == ["PopulationDiversity", "ParameterDrift"]
    assert objs[1].every_n_updates == 3


def test_every_subpackage_is_listed_for_installation():
    import tomllib

    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {
        ".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "es_lightning").rglob("__init__.py")
    }
    assert on_disk <= listed, f"add {sorted(on_disk - listed)} to [tool.setuptools] packages"
    assert "es_lightning.callbacks" in listed


@pytest.mark.integration
def test_a_built_wheel_installs_callbacks_as_es_lightning_callbacks(tmp_path):
    """A non-editable install gets the top-level callbacks/ folder as es_lightning.callbacks."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            str(REPO),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    (wheel,) = tmp_path.glob("es_lightning-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for module in ("base", "entropy", "drift", "attribution", "heldout", "diversity"):
        assert f"es_lightning/callbacks/{module}.py" in names
    assert "es_lightning/rollout/vllm/rollout.py" in names and "es_lightning/training/trainer.py" in names
    assert "es_lightning/models/assets/tiny-arithmetic/model.safetensors" in names
