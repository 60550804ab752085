"""The callback contract: typed attachment, and the package the top-level callbacks/ folder installs."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

from es_lightning.callbacks import HOOKS, Callback, check_callbacks
from tests.helpers import REPO


class _DuckTyped:
    def on_train_batch_end(self, trainer, step, metrics): ...


def test_callback_base_has_every_hook_as_a_no_op():
    cb = Callback()
    assert all(callable(getattr(cb, hook)) for hook in HOOKS)
    assert cb.state_dict() == {} and cb.load_state_dict({}) is None


def test_callbacks_and_duck_typed_objects_are_accepted():
    cbs = [Callback(), _DuckTyped()]
    assert check_callbacks(cbs) == cbs and check_callbacks(None) == []


@pytest.mark.parametrize(
    "bad", ["es_lightning.callbacks.ParameterDrift", Callback, {"class_path": "x"}, object()]
)
def test_non_callbacks_are_refused_with_their_index(bad):
    with pytest.raises(TypeError, match=r"callbacks\[1\].*is not a callback"):
        check_callbacks([Callback(), bad])


def test_a_string_in_a_recipe_fails_before_training(tmp_path):
    """`--callbacks+=Name` that names nothing callable used to be accepted and never called."""
    from es_lightning.cli import main

    with pytest.raises((TypeError, SystemExit)):
        main(
            [
                "fit",
                "--config",
                str(REPO / "recipes" / "smoke_cpu.yaml"),
                "--trainer.output_dir",
                str(tmp_path / "run"),
                "--callbacks",
                '["not-a-callback"]',
            ]
        )
    assert not (tmp_path / "run" / "metrics.jsonl").exists()


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


@pytest.mark.slow
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
    assert "es_lightning/rollout/vllm.py" in names and "es_lightning/training/trainer.py" in names
    assert "es_lightning/models/assets/tiny-arithmetic/model.safetensors" in names
