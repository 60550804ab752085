"""The user's loggers: a missing package is one error line (exit 2); a default save_dir lands in the run folder."""

from __future__ import annotations

import importlib.util

import pytest
from jsonargparse import Namespace
from lightning.fabric.loggers import Logger

from es_lightning.errors import ConfigError
from es_lightning.training.user_loggers import check_logger_packages, default_save_dirs
from tests.helpers import TINY_ES_RECIPE, run_main


def _entry(class_path, **init_args):
    return Namespace(class_path=class_path, init_args=Namespace(**init_args))


@pytest.mark.skipif(importlib.util.find_spec("wandb") is not None, reason="wandb is installed here")
def test_a_logger_without_its_package_is_one_error_line_and_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "run.yaml"
    config.write_text(TINY_ES_RECIPE + "loggers:\n  - class_path: lightning.pytorch.loggers.WandbLogger\n")
    out = tmp_path / "run"
    proc = run_main(capsys, "fit", "--config", str(config), "--trainer.output_dir", str(out))
    assert proc.returncode == 2, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("es-lightning: error:")]
    assert errors == [
        "es-lightning: error: loggers: lightning.pytorch.loggers.WandbLogger needs the 'wandb' package, "
        "which is not installed; pip install 'es-lightning[wandb]' (or remove the logger)"
    ]
    assert "Traceback" not in proc.stderr
    assert not out.exists()  # refused before the run folder is made


def test_check_names_each_missing_package_and_passes_the_others():
    check_logger_packages(None)
    check_logger_packages([_entry("lightning.pytorch.loggers.CSVLogger", save_dir="x")])
    for class_path, package in [
        ("lightning.pytorch.loggers.WandbLogger", "wandb"),
        ("lightning.pytorch.loggers.MLFlowLogger", "mlflow"),
    ]:
        if importlib.util.find_spec(package) is None:
            with pytest.raises(
                ConfigError, match=rf"{class_path} needs the '{package}' package.*\[{package}\]"
            ):
                check_logger_packages([_entry(class_path)])


def test_default_save_dirs_go_into_the_run_folder(tmp_path):
    loggers = [
        _entry("lightning.pytorch.loggers.WandbLogger", save_dir="."),  # the class default
        _entry("lightning.pytorch.loggers.MLFlowLogger", save_dir="./mlruns"),  # the class default
        _entry("lightning.pytorch.loggers.WandbLogger", save_dir="/elsewhere"),  # chosen: kept
        _entry("lightning.pytorch.loggers.CSVLogger", save_dir="logs"),  # required, so chosen: kept
        _entry("lightning.fabric.loggers.CSVLogger", root_dir="logs"),  # no save_dir
    ]
    default_save_dirs(loggers, tmp_path / "run")
    assert [e.init_args.get("save_dir") for e in loggers] == [
        str(tmp_path / "run"),
        str(tmp_path / "run" / "mlruns"),
        "/elsewhere",
        "logs",
        None,
    ]


class FolderLogger(Logger):
    """Test-local logger with a relative default ``save_dir`` (as W&B's ``"."``)."""

    def __init__(self, save_dir: str = ".", label: str = "x") -> None:
        super().__init__()
        self.save_dir, self.label = save_dir, label

    name = "folder"
    version = "0"

    def log_metrics(self, metrics, step=None):
        pass

    def log_hyperparams(self, params, *args, **kwargs):
        pass


def test_the_fit_parser_places_save_dir_when_it_builds_the_loggers(tmp_path):
    from es_lightning.training.command import fit_parser

    config = tmp_path / "run.yaml"
    config.write_text(
        TINY_ES_RECIPE
        + """loggers:
  - class_path: tests.training.test_logger_setup.FolderLogger
  - class_path: tests.training.test_logger_setup.FolderLogger
    init_args: {save_dir: chosen}
"""
    )
    parser = fit_parser()
    cfg = parser.parse_args(["--config", str(config), "--trainer.output_dir", str(tmp_path / "run")])
    loggers = parser.instantiate(cfg).loggers
    assert [logger.save_dir for logger in loggers] == [str(tmp_path / "run"), "chosen"]
