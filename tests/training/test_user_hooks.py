"""Your callback or logger failing (:mod:`es_lightning.training.user_hooks`): one line naming the
method, file and line; a failure in es-lightning's own callbacks keeps its traceback. The classes
are imported from a real file, as a recipe names them."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest
from lightning.fabric import Fabric

from es_lightning.callbacks import TokenEntropy
from es_lightning.errors import ConfigError
from es_lightning.training.user_hooks import UserHookError, call_hook, log_metrics
from tests.helpers import CLI, TINY_ES_RECIPE, line_of, subprocess_env, user_module

SOURCE = """
from lightning.fabric.loggers import Logger

from es_lightning.errors import ConfigError


class Stopper:
    def on_train_batch_end(self, trainer, step, metrics):
        if step >= 2:
            self.check(metrics)

    def check(self, metrics):
        raise ValueError(f"no reward key in {sorted(metrics)[:1]}")


class Refuser:
    def on_fit_start(self, trainer):
        raise ConfigError("Refuser: set my threshold first")


class Broken(Logger):
    name = "broken"
    version = 0

    def log_metrics(self, metrics, step=None):
        raise OSError("the server went away")

    def log_hyperparams(self, params, *args, **kwargs):
        pass
"""


@pytest.fixture()
def user(tmp_path: Path):
    with user_module(tmp_path, "user_hooks_mod", SOURCE) as imported:
        yield imported


def test_your_callback_raising_is_one_line_naming_the_hook_and_where_it_raised(user):
    module, file = user
    callbacks = [module.Stopper()]
    fabric = Fabric(accelerator="cpu", devices=1, callbacks=callbacks)
    call_hook(fabric, callbacks, "on_train_batch_end", trainer=None, step=1, metrics={"a": 1.0})  # fine
    with pytest.raises(UserHookError) as err:
        call_hook(fabric, callbacks, "on_train_batch_end", trainer=None, step=2, metrics={"a": 1.0})
    assert str(err.value) == (
        f"user_hooks_mod.Stopper.on_train_batch_end ({file}:{line_of(file, 'raise ValueError')}) raised "
        "ValueError: no reward key in ['a']"
    )
    assert isinstance(err.value.__cause__, ValueError)


def test_a_config_error_your_callback_raises_passes_as_it_is(user):
    module, _ = user
    callbacks = [module.Refuser()]
    fabric = Fabric(accelerator="cpu", devices=1, callbacks=callbacks)
    with pytest.raises(ConfigError, match="^Refuser: set my threshold first$") as err:
        call_hook(fabric, callbacks, "on_fit_start", trainer=None)
    assert not isinstance(err.value, UserHookError)


def test_your_logger_raising_is_oneline_of(user):
    module, file = user
    fabric = Fabric(accelerator="cpu", devices=1, loggers=[module.Broken()])
    with pytest.raises(UserHookError) as err:
        log_metrics(fabric, {"train/reward_mean": 0.5}, step=3)
    assert str(err.value) == (
        f"user_hooks_mod.Broken.log_metrics ({file}:{line_of(file, 'raise OSError')}) raised OSError: "
        "the server went away"
    )


def test_a_built_in_callback_failing_keeps_its_error():
    callbacks = [TokenEntropy(every_n_updates=1)]
    fabric = Fabric(accelerator="cpu", devices=1, callbacks=callbacks)
    with pytest.raises(AttributeError):  # a trainer it cannot use: es-lightning's bug, not yours
        call_hook(fabric, callbacks, "on_train_batch_end", trainer=None, step=1, metrics={})


@pytest.mark.integration
def test_fit_with_your_callback_failing_ends_in_one_line_and_keeps_the_checkpoint(tmp_path):
    (tmp_path / "user_hooks_mod.py").write_text(textwrap.dedent(SOURCE))
    recipe = TINY_ES_RECIPE + "callbacks:\n  - class_path: user_hooks_mod.Stopper\n"
    (tmp_path / "run.yaml").write_text(recipe)
    out = tmp_path / "run"
    cmd = [*CLI, "fit", "--config", "run.yaml", "--trainer.output_dir", str(out)]
    cmd += ["--trainer.max_steps", "4", "--trainer.checkpoint_every", "1"]
    env = subprocess_env()
    env.pop("ES_LIGHTNING_DEBUG", None)
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("es-lightning: error: ")]
    file = tmp_path / "user_hooks_mod.py"
    assert errors == [
        f"es-lightning: error: user_hooks_mod.Stopper.on_train_batch_end ({file}:"
        f"{line_of(file, 'raise ValueError')}) raised ValueError: no reward key in ['es/flip_rate']"
    ], proc.stderr[-3000:]
    assert (out / "checkpoints" / "latest").read_text().strip() == "step-000001"
    steps = [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert max(steps) == 2  # update 2 was logged before its hook raised
