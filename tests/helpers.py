"""Helpers shared by test modules (test modules never import each other)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest
import torch

from es_lightning.report.runs import RENDEZVOUS
from es_lightning.rollout.base import Rollout
from es_lightning.strategies import GRPOStrategy

REPO = Path(__file__).resolve().parents[1]
ASSETS = REPO / "tests" / "assets"
"""Small files the tests read: a few verbatim GSM8K and MBPP rows (licence notes beside them)."""
CLI = [sys.executable, "-m", "es_lightning"]

TINY_ES_RECIPE = """
module:
  model: es-lightning/tiny-random
  task: {class_path: es_lightning.tasks.Echo, init_args: {length: 4, n_train: 12, n_test: 4}}
  train_sampling: {temperature: 0.0, max_tokens: 6}
strategy:
  class_path: es_lightning.strategies.ESStrategy
  init_args: {population_size: 4, sigma: 0.05, learning_rate: 0.05}
rollout: {class_path: es_lightning.rollout.hf.HFRollout}
trainer: {batch_size: 4, seed: 3, accelerator: cpu, progress_bar: false}
evaluation: null
"""
"""The smallest real ES run: a random tiny model, the echo task, transformers rollouts (seconds)."""

REDRAW_TWO_UPDATES = ("--strategy.init_args.update", "redraw", "--trainer.max_steps", "2")
"""Overrides of ``TINY_ES_RECIPE`` for the rank-invariance runs: the update redrawn, two updates."""

DISTRIBUTED_VARS = RENDEZVOUS


def subprocess_env() -> dict[str, str]:
    """This process's environment without the rendezvous variables in-process Fabric tests set
    (a child would otherwise try to listen on a port this process already holds); the repository
    is on the path so recipes may name classes of ``tests.helpers``."""
    env = {k: v for k, v in os.environ.items() if k not in DISTRIBUTED_VARS}
    path = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    return env | {"PYTHONUNBUFFERED": "1", "PYTHONPATH": path}


def fit(tmp_path: Path, name: str, *overrides: str, recipe: str, timeout: int = 600) -> Path:
    """``es-lightning fit`` on the YAML text ``recipe`` into ``tmp_path/name``; asserts success."""
    config = tmp_path / f"{name}.yaml"
    config.write_text(recipe)
    out = tmp_path / name
    cmd = [*CLI, "fit", "--config", str(config), "--trainer.output_dir", str(out), *overrides]
    proc = subprocess.run(
        cmd, cwd=tmp_path, env=subprocess_env(), capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out


@dataclass(frozen=True)
class CommandResult:
    """What ``es-lightning ARGV`` run in this process ended with and printed."""

    returncode: int
    stdout: str
    stderr: str


def run_main(capture: pytest.CaptureFixture[str], *argv: str) -> CommandResult:
    """``es-lightning ARGV`` through :func:`es_lightning.cli.main` in this process: for command lines
    that train nothing (``--help``, usage errors, refusals, ``--print_config``), where the process
    boundary is not what a test checks. ``capture`` is ``capsys`` (or ``capfd``, to see what child
    processes write too). ``SystemExit`` (help, a usage error) becomes the exit status; help is laid
    out 80 columns wide, as in a child process whose output is a pipe, and the import path ``main``
    extends is put back."""
    from es_lightning.cli import main

    capture.readouterr()  # what earlier steps of the test printed is not this command's
    path, columns = list(sys.path), os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "80"
    try:
        status, exit_message = main(list(argv)), ""
    except SystemExit as exit_:
        code = exit_.code
        status = code if isinstance(code, int) else 0 if code is None else 1
        exit_message = "" if code is None or isinstance(code, int) else f"{code}\n"
    finally:
        sys.path[:] = path
        if columns is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = columns
    out, err = capture.readouterr()
    return CommandResult(status, out, err + exit_message)


def assert_bit_identical(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert set(a) == set(b)
    for name in a:
        assert torch.equal(a[name], b[name]), name


class CollectiveGRPO(GRPOStrategy):
    """GRPO whose weight stream and state saving start with a collective, as FSDP's gathers do,
    and which records every rank that wrote state: a checkpoint that only rank 0 takes part in
    hangs here instead of passing."""

    def named_weights(self, rollout):
        self.barrier("gather weights")
        yield from super().named_weights(rollout)

    def save_state(self, fabric, rollout, folder):
        self.all_reduce(torch.ones(1), reduce_op="sum")
        super().save_state(fabric, rollout, folder)
        record = Path(os.environ["ES_LIGHTNING_TEST_RECORD"])
        record.mkdir(parents=True, exist_ok=True)
        (record / f"rank{self.global_rank}-{folder.parent.name}").touch()


def generate_only_rollout():
    """A rollout that implements the generation contract and nothing else (no in-engine ES)."""
    from es_lightning.rollout.base import Rollout

    class GenerateOnly(Rollout):
        def setup(self, model_path, device, dtype): ...

        def generate(self, prompts, sampling):
            return []

        def load_weights(self, named_tensors): ...

        def checksum(self):
            return 0.0

        def digest(self):
            return ""

    return GenerateOnly()


class EngineTripwire(Rollout):
    """A rollout that fails the run the moment an engine would be set up: in a recipe whose error
    must come before any engine (``rollout: {class_path: tests.helpers.EngineTripwire}``)."""

    def setup(self, model_path, device, dtype):
        raise RuntimeError("EngineTripwire: a rollout engine was set up")

    def start(self):
        raise RuntimeError("EngineTripwire: a rollout engine was started")

    def generate(self, prompts, sampling):
        raise RuntimeError("EngineTripwire: generate")

    def load_weights(self, named_tensors):
        raise RuntimeError("EngineTripwire: load_weights")

    def checksum(self):
        raise RuntimeError("EngineTripwire: checksum")

    def digest(self):
        raise RuntimeError("EngineTripwire: digest")


@contextmanager
def user_module(folder: Path, name: str, source: str) -> Iterator[tuple[ModuleType, Path]]:
    """``source`` written to ``folder/name.py`` and imported as a recipe would name it (your reward
    functions, tasks, callbacks): the module and its file; unimported afterwards."""
    file = folder / f"{name}.py"
    file.write_text(textwrap.dedent(source))
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module(name), file
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop(name, None)


def line_of(file: Path, text: str) -> int:
    """The 1-based number of the first line of ``file`` that contains ``text``."""
    return next(i for i, line in enumerate(file.read_text().splitlines(), 1) if text in line)
