"""One run per folder: the lock is held against other real processes and dies with its holder."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from es_lightning.training.run_dir import (
    LOCK_FILE,
    RunLockedError,
    acquire_run_lock,
    hold_run_lock,
    holds_run_lock,
    release_run_lock,
)
from tests.helpers import CLI, TINY_ES_RECIPE, subprocess_env

pytestmark = pytest.mark.integration

HOLDER = """
import sys, time
from es_lightning.training.run_dir import acquire_run_lock
acquire_run_lock(sys.argv[1])
print("held", flush=True)
time.sleep(600)
"""
TRY = """
import sys
from es_lightning.training.run_dir import RunLockedError, acquire_run_lock
try:
    acquire_run_lock(sys.argv[1])
except RunLockedError as err:
    print(err)
    sys.exit(3)
print("acquired")
"""


def _holder(folder: Path) -> subprocess.Popen:
    """A real process that takes ``folder``'s lock and sleeps (returns once it holds it)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder)], env=subprocess_env(), stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "held"
    return proc


def _try(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", TRY, str(folder)],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_second_process_is_refused_with_the_holders_pid(tmp_path):
    with hold_run_lock(tmp_path / "run"):
        assert holds_run_lock(tmp_path / "run")
        assert (tmp_path / "run" / LOCK_FILE).read_text().strip() == str(os.getpid())
        other = _try(tmp_path / "run")
        assert other.returncode == 3, other.stdout + other.stderr
        assert f"pid {os.getpid()}" in other.stdout and "in use by another run" in other.stdout
    assert not holds_run_lock(tmp_path / "run")
    assert _try(tmp_path / "run").stdout.strip() == "acquired"  # released at the end of the block


def test_the_lock_of_a_killed_process_never_blocks(tmp_path):
    holder = _holder(tmp_path)
    with pytest.raises(RunLockedError, match=f"pid {holder.pid}"):
        acquire_run_lock(tmp_path)
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    assert (tmp_path / LOCK_FILE).read_text().strip() == str(holder.pid)  # the stale file stays
    acquire_run_lock(tmp_path)  # ... and blocks nothing
    try:
        assert (tmp_path / LOCK_FILE).read_text().strip() == str(os.getpid())
    finally:
        release_run_lock(tmp_path)


def test_the_lock_is_reentrant_within_a_process(tmp_path):
    acquire_run_lock(tmp_path)
    acquire_run_lock(tmp_path / "." / "")  # the same folder, spelt differently
    release_run_lock(tmp_path)
    assert holds_run_lock(tmp_path)
    assert _try(tmp_path).returncode == 3
    release_run_lock(tmp_path)
    assert not holds_run_lock(tmp_path)
    assert _try(tmp_path).returncode == 0


@pytest.mark.parametrize("resume", [[], ["--trainer.resume", "auto"]], ids=["fit", "resume"])
def test_fit_in_a_folder_in_use_is_refused_before_anything_is_loaded(tmp_path, resume):
    out = tmp_path / "run"
    holder = _holder(out)
    try:
        (tmp_path / "recipe.yaml").write_text(TINY_ES_RECIPE)
        proc = subprocess.run(
            [*CLI, "fit", "--config", "recipe.yaml", "--trainer.output_dir", str(out), *resume],
            cwd=tmp_path,
            env=subprocess_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("es-lightning: error: ")]
    assert len(errors) == 1, proc.stderr[-3000:]
    assert f"pid {holder.pid}" in errors[0] and str(out) in errors[0]
    assert sorted(p.name for p in out.iterdir()) == [LOCK_FILE]  # no config.yaml, logs or meta
    assert "Loading weights" not in proc.stdout + proc.stderr  # no model was loaded
